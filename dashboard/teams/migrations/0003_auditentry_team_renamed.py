"""A team's rename is in its audit log (teams.services.team_rename): a new
choice of AuditEntry.action, which changes nothing in the table."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("teams", "0002_personal_teams"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditentry",
            name="action",
            field=models.CharField(
                choices=[
                    ("team.created", "created the team"),
                    ("team.renamed", "renamed the team"),
                    ("link.created", "created a link"),
                    ("link.changed", "changed a link"),
                    ("link.disabled", "disabled a link"),
                    ("link.enabled", "enabled a link"),
                    ("link.deleted", "deleted a link"),
                    ("member.added", "added a member"),
                    ("member.changed", "changed a member's role"),
                    ("member.removed", "removed a member"),
                    ("token.created", "created an API token"),
                    ("token.revoked", "revoked an API token"),
                ],
                max_length=20,
            ),
        ),
    ]

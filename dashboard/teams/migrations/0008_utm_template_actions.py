"""The audit's words for a team's UTM templates made, changed and deleted
(teams.models.Action): Django's state alone, no change to the database."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0007_visits_deleted_action"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditentry",
            name="action",
            field=models.CharField(
                choices=[
                    ("team.created", "created the team"),
                    ("team.renamed", "renamed the team"),
                    ("team.second_factor", "changed whether members need a second factor"),
                    ("link.created", "created a link"),
                    ("link.changed", "changed a link"),
                    ("link.disabled", "disabled a link"),
                    ("link.enabled", "enabled a link"),
                    ("link.deleted", "deleted a link"),
                    ("link.visits_deleted", "deleted a link's visits"),
                    ("member.added", "added a member"),
                    ("member.changed", "changed a member's role"),
                    ("member.removed", "removed a member"),
                    ("token.created", "created an API token"),
                    ("token.revoked", "revoked an API token"),
                    ("link.blocked", "stopped a link (staff)"),
                    ("link.unblocked", "let a stopped link go on (staff)"),
                    ("team.suspended", "suspended the team (staff)"),
                    ("team.unsuspended", "lifted the team's suspension (staff)"),
                    ("member.suspended", "suspended a person (staff)"),
                    ("member.unsuspended", "lifted a person's suspension (staff)"),
                    ("utm_template.created", "made a UTM template"),
                    ("utm_template.changed", "changed a UTM template"),
                    ("utm_template.deleted", "deleted a UTM template"),
                ],
                max_length=20,
            ),
        ),
    ]

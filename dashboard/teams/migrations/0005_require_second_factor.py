"""A team that requires a second factor of its members (accounts/second_factor.py):
its column, as sql/teams.sql has it. A new database has it from 0001
already, hence IF NOT EXISTS; the model's state is Django's alone."""

from django.db import migrations, models

SQL = "ALTER TABLE teams_team ADD COLUMN IF NOT EXISTS require_second_factor boolean DEFAULT false NOT NULL"


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0004_groups"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(SQL, reverse_sql="ALTER TABLE teams_team DROP COLUMN require_second_factor")
            ],
            state_operations=[
                migrations.AddField(
                    model_name="team",
                    name="require_second_factor",
                    field=models.BooleanField(db_default=False, default=False),
                ),
            ],
        ),
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

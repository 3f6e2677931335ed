"""A token belongs to a team: each existing token to its person's personal
team (teams/migrations/0002_personal_teams.py), where it reaches what it
reached before."""

import django.db.models.deletion
from django.db import migrations, models

INTO_PERSONAL_TEAMS = """
SET CONSTRAINTS ALL IMMEDIATE;
UPDATE api_apitoken k SET team_id = t.id FROM teams_team t WHERE t.personal_for_id = k.user_id;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("api", "0001_initial"),
        ("teams", "0002_personal_teams"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="team",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="api_tokens", to="teams.team"),
        ),
        migrations.RunSQL(INTO_PERSONAL_TEAMS, reverse_sql=migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="apitoken",
            name="team",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="api_tokens", to="teams.team"),
        ),
    ]

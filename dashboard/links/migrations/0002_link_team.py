"""Links belong to a team: each existing link, and each CSV import, moves
into its owner's personal team (teams/migrations/0002_personal_teams.py).
Clicks, rollups and totals are keyed by the link's id, which does not
change: none of them is touched. The owner becomes "created by", kept empty
when that person is deleted."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

INTO_PERSONAL_TEAMS = """
SET CONSTRAINTS ALL IMMEDIATE;
UPDATE links_link l SET team_id = t.id FROM teams_team t WHERE t.personal_for_id = l.owner_id;
UPDATE links_linkimport i SET team_id = t.id FROM teams_team t WHERE t.personal_for_id = i.owner_id;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("links", "0001_initial"),
        ("teams", "0002_personal_teams"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="link",
            name="team",
            field=models.ForeignKey(db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="links", to="teams.team"),
        ),
        migrations.AddField(
            model_name="linkimport",
            name="team",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="link_imports", to="teams.team"),
        ),
        migrations.RunSQL(INTO_PERSONAL_TEAMS, reverse_sql=migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="link",
            name="team",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name="links", to="teams.team"),
        ),
        migrations.AlterField(
            model_name="linkimport",
            name="team",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="link_imports", to="teams.team"),
        ),
        migrations.AlterField(
            model_name="link",
            name="owner",
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="links", to=settings.AUTH_USER_MODEL, verbose_name="created by"),
        ),
        migrations.AddIndex(
            model_name="link",
            index=models.Index(fields=["team", "-created_at"], name="link_team_created"),
        ),
    ]

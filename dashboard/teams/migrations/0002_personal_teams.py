"""A personal team for every person made before teams existed, with them as
its admin. People made later get theirs when they are made (teams/signals.py)."""

from django.db import migrations

PERSONAL_TEAMS = """
INSERT INTO teams_team (name, created_at, personal_for_id)
SELECT u.username, now(), u.id FROM auth_user u
WHERE NOT EXISTS (SELECT 1 FROM teams_team t WHERE t.personal_for_id = u.id);

INSERT INTO teams_membership (role, created_at, user_id, team_id)
SELECT 'admin', now(), t.personal_for_id, t.id FROM teams_team t
WHERE t.personal_for_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM teams_membership m WHERE m.team_id = t.id AND m.user_id = t.personal_for_id);
"""


class Migration(migrations.Migration):

    dependencies = [
        ("teams", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(PERSONAL_TEAMS, reverse_sql=migrations.RunSQL.noop),
    ]

"""Two more kinds in click_deletions_hour, as sql/clicks.sql has them: a
team's visits purged past its retention (`purged`, with their rollups) and
imported ones whose raw clicks went while their rollups stayed (`imported`;
clicks/retention.py)."""

from django.db import migrations

KINDS = "'click', 'dropped', 'orphan'"

WIDEN = f"""
ALTER TABLE click_deletions_hour DROP CONSTRAINT IF EXISTS click_deletions_hour_kind;
ALTER TABLE click_deletions_hour ADD CONSTRAINT click_deletions_hour_kind
    CHECK (kind IN ({KINDS}, 'purged', 'imported'));
"""
NARROW = f"""
DELETE FROM click_deletions_hour WHERE kind IN ('purged', 'imported');
ALTER TABLE click_deletions_hour DROP CONSTRAINT IF EXISTS click_deletions_hour_kind;
ALTER TABLE click_deletions_hour ADD CONSTRAINT click_deletions_hour_kind CHECK (kind IN ({KINDS}));
"""


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0007_orphan_kinds"),
    ]

    operations = [migrations.RunSQL(WIDEN, reverse_sql=NARROW)]

"""Two more kinds of orphan visit (slingshot/click_record.toml): `listed`,
a link whose destination is on a blocklist (a 451 or a warning page), and
`blocked`, a link the service's staff stopped (moderation/). The check of
orphan_visits' kinds widened, as sql/clicks.sql has it. PostgreSQL checks
the rows there are against it: a table of many orphan visits takes a while,
during which the importers wait (docs/releasing.md)."""

from django.db import migrations

KINDS = "'unknown', 'disabled', 'scheduled', 'expired', 'limit', 'password'"

WIDEN = f"""
ALTER TABLE orphan_visits DROP CONSTRAINT IF EXISTS orphan_visits_kind_check;
ALTER TABLE orphan_visits ADD CONSTRAINT orphan_visits_kind_check CHECK (kind IN ({KINDS}, 'listed', 'blocked'));
"""
NARROW = f"""
ALTER TABLE orphan_visits DROP CONSTRAINT IF EXISTS orphan_visits_kind_check;
ALTER TABLE orphan_visits ADD CONSTRAINT orphan_visits_kind_check CHECK (kind IN ({KINDS}));
"""


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0006_click_deletions_hour"),
    ]

    operations = [migrations.RunSQL(WIDEN, reverse_sql=NARROW)]

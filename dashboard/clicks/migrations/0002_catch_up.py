"""Brings the click tables of any database made before release 1.0.0 to the
schema of 1.0.0 (see links/migrations/0004_catch_up.py for why): what
served a click (`clicks.rule`, and the `rule` breakdown), an orphan visit's
kind and domain, the kinds of 1.0.0 (visits past a link's limit, views of
a password page), and the partition function that importers starting
together do not race in. Every statement checks what is there first, or
replaces what it writes in whole. Adding a column with a constant default
does not rewrite a table, however many clicks it holds."""

from django.db import migrations

CATCH_UP = """
ALTER TABLE clicks ADD COLUMN IF NOT EXISTS rule text;

-- Orphan visits stored before they had a kind were of unknown slugs, on the default domain.
ALTER TABLE orphan_visits ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'unknown';
ALTER TABLE orphan_visits ALTER COLUMN kind DROP DEFAULT;
ALTER TABLE orphan_visits ADD COLUMN IF NOT EXISTS domain text NOT NULL DEFAULT '';
ALTER TABLE orphan_visits ALTER COLUMN domain DROP DEFAULT;
ALTER TABLE orphan_visits DROP CONSTRAINT IF EXISTS orphan_visits_kind_check;
ALTER TABLE orphan_visits ADD CONSTRAINT orphan_visits_kind_check
    CHECK (kind IN ('unknown', 'disabled', 'scheduled', 'expired', 'limit', 'password'));

ALTER TABLE click_breakdown_hour DROP CONSTRAINT IF EXISTS click_breakdown_hour_dimension;
ALTER TABLE click_breakdown_hour ADD CONSTRAINT click_breakdown_hour_dimension
    CHECK (dimension IN ('referer_host', 'browser', 'os', 'device', 'country', 'rule'));
ALTER TABLE click_breakdown_day DROP CONSTRAINT IF EXISTS click_breakdown_day_dimension;
ALTER TABLE click_breakdown_day ADD CONSTRAINT click_breakdown_day_dimension
    CHECK (dimension IN ('referer_host', 'browser', 'os', 'device', 'country', 'rule'));

CREATE OR REPLACE FUNCTION slingshot_ensure_month_partitions(parent text, from_ts timestamptz, months_ahead integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    month_start timestamp := date_trunc('month', from_ts AT TIME ZONE 'UTC');
    created     integer := 0;
    part_name   text;
BEGIN
    -- Importers starting together would race to create the same partition.
    PERFORM pg_advisory_xact_lock(hashtext('slingshot partitions of ' || parent));
    FOR i IN 0..months_ahead LOOP
        part_name := format('%s_y%sm%s', parent, to_char(month_start, 'YYYY'), to_char(month_start, 'MM'));
        IF to_regclass(part_name) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                part_name, parent,
                month_start AT TIME ZONE 'UTC',
                (month_start + interval '1 month') AT TIME ZONE 'UTC'
            );
            created := created + 1;
        END IF;
        month_start := month_start + interval '1 month';
    END LOOP;
    RETURN created;
END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(CATCH_UP, migrations.RunSQL.noop, elidable=True),
    ]

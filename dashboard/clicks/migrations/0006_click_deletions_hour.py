"""click_deletions_hour (sql/clicks.sql): what was deleted of the visits
the edges served, per hour, which the accounting sets beside what is
stored. A new database has the table from 0001 already. Nothing deleted
before this migration is known: an hour of the last 8 days in which visits
were deleted before the upgrade keeps showing them as a difference."""

from django.db import migrations

CREATE = """
CREATE TABLE IF NOT EXISTS click_deletions_hour (
    bucket timestamptz NOT NULL,
    kind   text        NOT NULL,
    visits bigint      NOT NULL,
    PRIMARY KEY (bucket, kind),
    CONSTRAINT click_deletions_hour_kind CHECK (kind IN ('click', 'dropped', 'orphan')),
    CONSTRAINT click_deletions_hour_visits CHECK (visits > 0),
    CONSTRAINT click_deletions_hour_aligned CHECK (date_trunc('hour', bucket AT TIME ZONE 'UTC') = bucket AT TIME ZONE 'UTC')
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0005_month_breakdowns"),
    ]

    operations = [migrations.RunSQL(CREATE, reverse_sql=migrations.RunSQL.noop)]

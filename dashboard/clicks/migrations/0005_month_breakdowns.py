"""click_breakdown_month (sql/rollups.sql): the breakdowns per link and UTC
month, filled from the day breakdowns of the days the fold has gone past
whole (those before the day its mark is in), as the fold adds them from now
on. A new database has the table from 0001 already, and no days. The fold's row
is locked first, so that no fold or late click adds to the days while they
are read; the days are read a link at a time, so that the statement's
sort stays one link's size however many links there are."""

import sys
import time

from django.db import migrations

CREATE = """
CREATE TABLE IF NOT EXISTS click_breakdown_month (
    LIKE click_breakdown_hour,
    PRIMARY KEY (link_id, bucket, dimension, value),
    CONSTRAINT click_breakdown_month_dimension CHECK (
        dimension IN ('referer_host', 'browser', 'os', 'device', 'country', 'rule')),
    CONSTRAINT click_breakdown_month_counts CHECK (0 <= human_clicks AND human_clicks <= clicks),
    CONSTRAINT click_breakdown_month_aligned CHECK (
        date_trunc('month', bucket AT TIME ZONE 'UTC') = bucket AT TIME ZONE 'UTC')
) WITH (fillfactor = 80)
"""
FILL = """
INSERT INTO click_breakdown_month (link_id, bucket, dimension, value, clicks, human_clicks)
SELECT link_id, date_trunc('month', bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', dimension, value,
       sum(clicks), sum(human_clicks)
FROM click_breakdown_day
WHERE link_id = %(link)s AND bucket < date_trunc('day', %(folded)s AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
GROUP BY 1, 2, 3, 4
ORDER BY 1, 2, 3, 4
ON CONFLICT (link_id, bucket, dimension, value) DO NOTHING
"""
PROGRESS_SECONDS = 10


def fill(cursor) -> None:
    """Month rows for every day the fold has gone past, in the caller's transaction."""
    cursor.execute("SELECT folded_before FROM click_day_fold FOR UPDATE")
    (folded,) = cursor.fetchone()
    cursor.execute("SELECT DISTINCT link_id FROM click_breakdown_day ORDER BY 1")
    links = [link for (link,) in cursor.fetchall()]
    reported = time.monotonic()
    for done, link in enumerate(links, 1):
        cursor.execute(FILL, {"link": link, "folded": folded})
        if time.monotonic() - reported > PROGRESS_SECONDS:
            reported = time.monotonic()
            print(f"  clicks.0005: the month breakdowns of {done:,} of {len(links):,} links", file=sys.stderr)


def forwards(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(CREATE)
        fill(cursor)


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0004_six_hour_rollups"),
    ]

    operations = [migrations.RunPython(forwards, reverse_code=migrations.RunPython.noop)]

"""click_rollup_6h (sql/rollups.sql): the rollups per link and six UTC
hours, filled from the hours folded so far. A new database has the table
from 0001 already, and no hours. The fold's row is locked first, so that no
fold or late click adds to the hours while they are read; the hours are
read a link at a time, so that a link's few thousand sketches are united in
memory however many links there are."""

import sys
import time

from django.db import migrations

CREATE = """
CREATE TABLE IF NOT EXISTS click_rollup_6h (
    LIKE click_rollup_hour INCLUDING DEFAULTS,
    PRIMARY KEY (link_id, bucket),
    CONSTRAINT click_rollup_6h_counts CHECK (
        0 <= human_clicks AND human_clicks <= clicks
        AND 0 <= visitors AND visitors <= clicks AND 0 <= human_visitors AND human_visitors <= human_clicks),
    CONSTRAINT click_rollup_6h_aligned CHECK (date_bin('6 hours', bucket, timestamptz '1970-01-01 00:00+00') = bucket)
) WITH (fillfactor = 80)
"""
FILL = """
INSERT INTO click_rollup_6h (link_id, bucket, clicks, human_clicks, visitors, human_visitors,
                             visitor_sketch, human_visitor_sketch)
SELECT link_id, bucket, clicks, human_clicks,
       least(clicks, round(coalesce(hll_cardinality(visitor_sketch), 0))),
       least(human_clicks, round(coalesce(hll_cardinality(human_visitor_sketch), 0))),
       visitor_sketch, human_visitor_sketch
FROM (
    SELECT link_id, date_bin('6 hours', bucket, timestamptz '1970-01-01 00:00+00') AS bucket,
           sum(clicks) AS clicks, sum(human_clicks) AS human_clicks,
           hll_union_agg(visitor_sketch) AS visitor_sketch, hll_union_agg(human_visitor_sketch) AS human_visitor_sketch
    FROM click_rollup_hour
    WHERE link_id = %(link)s AND bucket < %(folded)s
    GROUP BY 1, 2
) blocks
ORDER BY 1, 2
ON CONFLICT (link_id, bucket) DO NOTHING
"""
PROGRESS_SECONDS = 10


def fill(cursor) -> None:
    """Rows of six hours for every hour folded, in the caller's transaction."""
    cursor.execute("SELECT folded_before FROM click_day_fold FOR UPDATE")
    (folded,) = cursor.fetchone()
    cursor.execute("SELECT DISTINCT link_id FROM click_rollup_hour WHERE bucket < %s ORDER BY 1", [folded])
    links = [link for (link,) in cursor.fetchall()]
    reported = time.monotonic()
    for done, link in enumerate(links, 1):
        cursor.execute(FILL, {"link": link, "folded": folded})
        if time.monotonic() - reported > PROGRESS_SECONDS:
            reported = time.monotonic()
            print(f"  clicks.0004: the rollups of six hours of {done:,} of {len(links):,} links", file=sys.stderr)


def forwards(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(CREATE)
        fill(cursor)


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0003_import_id"),
    ]

    operations = [migrations.RunPython(forwards, reverse_code=migrations.RunPython.noop)]

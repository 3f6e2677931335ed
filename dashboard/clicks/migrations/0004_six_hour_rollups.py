"""click_rollup_6h (sql/rollups.sql): the rollups per link and six UTC
hours, filled from the hours folded so far. A new database has the table
from 0001 already, and no hours. The fold's row is locked first, so that no
fold or late click adds to the hours while they are read."""

from django.db import migrations

SIX_HOURS = """
CREATE TABLE IF NOT EXISTS click_rollup_6h (
    LIKE click_rollup_hour INCLUDING DEFAULTS,
    PRIMARY KEY (link_id, bucket),
    CONSTRAINT click_rollup_6h_counts CHECK (
        0 <= human_clicks AND human_clicks <= clicks
        AND 0 <= visitors AND visitors <= clicks AND 0 <= human_visitors AND human_visitors <= human_clicks),
    CONSTRAINT click_rollup_6h_aligned CHECK (date_bin('6 hours', bucket, timestamptz '1970-01-01 00:00+00') = bucket)
) WITH (fillfactor = 80);

SELECT folded_before FROM click_day_fold FOR UPDATE;

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
    WHERE bucket < (SELECT folded_before FROM click_day_fold)
    GROUP BY 1, 2
) blocks
ORDER BY 1, 2
ON CONFLICT (link_id, bucket) DO NOTHING;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0003_import_id"),
    ]

    operations = [migrations.RunSQL(SIX_HOURS, reverse_sql=migrations.RunSQL.noop)]

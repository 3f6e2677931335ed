"""A link's rollups as a year of its traffic leaves them, written straight
into the rollup tables (sql/rollups.sql, docs/rollups.md): for the report
timings of `make bench-import` (bench_selectors) and `make bench-api`.

Every hour has about the same clicks, a tenth of them bots, spread over
each dimension's values as real traffic spreads them (a few values take
most clicks, a long tail the rest): 20 referrer hosts, 15 browsers, 10
systems, 4 device classes, 150 countries, and 5 rules serving a third of
the clicks. Each hour's visitor sketches are filled as the importer fills
them (`hll_add_agg` of 12, 5), with visitors who come back from hour to
hour; the day rows, the rows of six hours, the month breakdowns and the
totals are folded from the hours as the day fold does, and the fold's mark
is set past them.
"""

from datetime import timedelta

# How many values each dimension has in an hour; a value's clicks go down as 1/rank.
SPREAD = {"referer_host": 20, "browser": 15, "os": 10, "device": 4, "country": 150, "rule": 5}
RULE_SHARE = 3  # a rule served one click in RULE_SHARE
VISITOR_POOL = 400_000  # the visitors an hour's come from
HLL = "12, 5"  # clicks.rollups.HLL
HOUR = timedelta(hours=1)

_STATEMENTS = [
    f"""
    INSERT INTO click_rollup_hour (link_id, bucket, clicks, human_clicks, visitors, human_visitors,
                                   visitor_sketch, human_visitor_sketch)
    SELECT %(link)s, h.bucket, h.clicks, h.clicks - h.clicks / 10,
           least(h.clicks, round(hll_cardinality(s.everyone))),
           least(h.clicks - h.clicks / 10, round(hll_cardinality(s.humans))), s.everyone, s.humans
    FROM (SELECT bucket, row_number() OVER (ORDER BY bucket) AS n,
                 greatest(1, %(per_hour)s + (extract(epoch FROM bucket)::bigint / 3600) %% 7 - 3) AS clicks
          FROM generate_series(%(start)s::timestamptz, %(end)s::timestamptz - interval '1 hour', interval '1 hour')
              bucket) h
    CROSS JOIN LATERAL (
        SELECT hll_add_agg(hll_hash_bigint(v), {HLL}) AS everyone,
               coalesce(hll_add_agg(hll_hash_bigint(v), {HLL}) FILTER (WHERE i %% 10 <> 0), hll_empty({HLL})) AS humans
        FROM generate_series(1, h.clicks * 6 / 10) i, LATERAL (SELECT (h.n * 7919 + i * 104729) %% {VISITOR_POOL}) v (v)
    ) s
    """,
    # Each value's share of its dimension's clicks: 1/rank over the
    # harmonic number of the dimension's values, and of its bots as many as
    # its share of the clicks gives, the first value taking what the
    # rounding leaves.
    f"""
    INSERT INTO click_breakdown_hour (link_id, bucket, dimension, value, clicks, human_clicks)
    SELECT link_id, bucket, dimension, dimension || '-' || v, clicks, clicks - bots
    FROM (SELECT link_id, bucket, dimension, v,
                 CASE WHEN v = 1 THEN total - (sum(share) OVER w - share) ELSE share END AS clicks,
                 CASE WHEN v = 1 THEN least(total - (sum(share) OVER w - share), total_bots - (sum(bot_share) OVER w - bot_share))
                      ELSE bot_share END AS bots
          FROM (SELECT r.link_id, r.bucket, d.dimension, v, t.total, t.total_bots,
                       floor(t.total / (v * d.harmonic))::bigint AS share,
                       floor(floor(t.total / (v * d.harmonic)) * t.total_bots / greatest(t.total, 1))::bigint AS bot_share
                FROM click_rollup_hour r
                CROSS JOIN (VALUES {", ".join(f"('{dimension}', {n}, {sum(1 / rank for rank in range(1, n + 1))})" for dimension, n in SPREAD.items())})
                    d (dimension, n, harmonic)
                CROSS JOIN LATERAL (
                    SELECT CASE WHEN d.dimension = 'rule' THEN r.clicks / {RULE_SHARE} ELSE r.clicks END,
                           CASE WHEN d.dimension = 'rule' THEN (r.clicks - r.human_clicks) / {RULE_SHARE}
                                ELSE r.clicks - r.human_clicks END
                ) t (total, total_bots)
                CROSS JOIN LATERAL generate_series(1, d.n) v
                WHERE r.link_id = %(link)s) shares
          WINDOW w AS (PARTITION BY bucket, dimension)) counted
    """,
    "DELETE FROM click_breakdown_hour WHERE link_id = %(link)s AND clicks = 0",
    """
    INSERT INTO click_rollup_day (link_id, bucket, clicks, human_clicks, visitors, human_visitors,
                                  visitor_sketch, human_visitor_sketch)
    SELECT link_id, day, clicks, human_clicks, least(clicks, round(hll_cardinality(everyone))),
           least(human_clicks, round(hll_cardinality(humans))), everyone, humans
    FROM (SELECT link_id, date_trunc('day', bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day,
                 sum(clicks) AS clicks, sum(human_clicks) AS human_clicks,
                 hll_union_agg(visitor_sketch) AS everyone, hll_union_agg(human_visitor_sketch) AS humans
          FROM click_rollup_hour WHERE link_id = %(link)s GROUP BY 1, 2) days
    """,
    """
    INSERT INTO click_rollup_6h (link_id, bucket, clicks, human_clicks, visitors, human_visitors,
                                 visitor_sketch, human_visitor_sketch)
    SELECT link_id, block, clicks, human_clicks, least(clicks, round(hll_cardinality(everyone))),
           least(human_clicks, round(hll_cardinality(humans))), everyone, humans
    FROM (SELECT link_id, date_bin('6 hours', bucket, timestamptz 'epoch') AS block,
                 sum(clicks) AS clicks, sum(human_clicks) AS human_clicks,
                 hll_union_agg(visitor_sketch) AS everyone, hll_union_agg(human_visitor_sketch) AS humans
          FROM click_rollup_hour WHERE link_id = %(link)s GROUP BY 1, 2) blocks
    """,
    """
    INSERT INTO click_breakdown_day (link_id, bucket, dimension, value, clicks, human_clicks)
    SELECT link_id, date_trunc('day', bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', dimension, value,
           sum(clicks), sum(human_clicks)
    FROM click_breakdown_hour WHERE link_id = %(link)s GROUP BY 1, 2, 3, 4
    """,
    """
    INSERT INTO click_breakdown_month (link_id, bucket, dimension, value, clicks, human_clicks)
    SELECT link_id, date_trunc('month', bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', dimension, value,
           sum(clicks), sum(human_clicks)
    FROM click_breakdown_day
    WHERE link_id = %(link)s AND bucket < date_trunc('day', %(end)s::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    GROUP BY 1, 2, 3, 4
    """,
    """
    INSERT INTO link_click_totals (link_id, clicks, human_clicks)
    SELECT link_id, sum(clicks), sum(human_clicks) FROM click_rollup_hour WHERE link_id = %(link)s GROUP BY 1
    """,
    # The day rows and the rows of six hours above hold these hours, the
    # month breakdowns their days before the last: the fold's mark goes past
    # them (docs/rollups.md).
    "UPDATE click_day_fold SET folded_before = greatest(folded_before, %(end)s::timestamptz)",
]


def write_rollups(cursor, *, link_id: int, clicks: int, days: int) -> int:
    """Writes `days` of hourly rollups up to the end of the current hour for
    `link_id`, about `clicks` clicks in all, with `cursor` (Django's or
    psycopg's); returns the clicks written. ANALYZE the tables after."""
    cursor.execute("SELECT date_trunc('hour', now()) + interval '1 hour'")
    end = cursor.fetchone()[0]
    hours = days * 24
    params = {"link": link_id, "per_hour": max(4, round(clicks / hours)), "start": end - hours * HOUR, "end": end}
    for statement in _STATEMENTS:
        cursor.execute(statement, params)
    cursor.execute("SELECT clicks FROM link_click_totals WHERE link_id = %(link)s", params)
    return cursor.fetchone()[0]


ANALYZE = (
    "ANALYZE click_rollup_hour, click_rollup_day, click_rollup_6h, click_breakdown_hour, click_breakdown_day,"
    " click_breakdown_month, link_click_totals"
)

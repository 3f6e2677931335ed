"""The rollups (docs/rollups.md): every statement that adds to them, folds
them or deletes from them, and the bucket expressions the selectors read
them with. The tables are in sql/rollups.sql.

A batch reaches the rollups through two temporary tables: `batch_breakdown`
(clicks per link, hour, dimension and value) and `batch_visitor_sets` (the
visitor hashes of a link's clicks in an hour, bots and humans apart).
`add_batch` adds them to the hour tables, to the day tables,
click_rollup_6h and click_breakdown_month for hours already folded, and to
the totals.
"""

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone

from django.db import connection, transaction

log = logging.getLogger(__name__)

# Every counted click adds one to exactly one value of each.
# `rule` counts only the clicks a rule or a split's destination served (its
# label, docs/contract.md); the others went to the link's own url.
DIMENSIONS = ("referer_host", "browser", "os", "device", "country", "rule")
# HyperLogLog parameters of the visitor sketches: 2^12 registers of 5 bits.
HLL = "12, 5"
HOUR_MS = 3_600_000
# How long after an hour ends it is folded into the day tables: the clicks of
# an hour come in within seconds, and any that come later still count (late clicks).
FOLD_AFTER = timedelta(minutes=10)

# --- what the selectors read with -------------------------------------------------

# The UTC hour of a moment: the bucket of the hour tables it is counted in.
HOUR_OF = "date_bin('1 hour', {moment}, timestamptz 'epoch')"
# The UTC day of a moment, and of an hour row's bucket.
DAY_OF = "date_trunc('day', {bucket} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
DAY_OF_BUCKET = DAY_OF.format(bucket="bucket")
# The UTC month of a bucket: its bucket in click_breakdown_month.
MONTH_OF = "date_trunc('month', {bucket} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
# The six UTC hours (from 00, 06, 12 or 18) an hour row's bucket falls in: its bucket in click_rollup_6h.
SIX_HOURS_OF = "date_bin('6 hours', {bucket}, timestamptz 'epoch')"
# The first hour from %s on that is not in the day tables yet; a scalar
# subquery, so that PostgreSQL can use it as an index bound.
NOT_FOLDED = "greatest(%s, (SELECT folded_before FROM click_day_fold))"
# The month breakdowns hold the UTC days the fold has gone past whole: every
# day before the one its mark is in.
MONTHS_BEFORE = DAY_OF.format(bucket="folded_before")
# The first day from %s on that is not in the month breakdowns yet.
NOT_IN_MONTHS = f"greatest(%s, (SELECT {MONTHS_BEFORE} FROM click_day_fold))"

# --- a batch ---------------------------------------------------------------------

TEMP_TABLES = """
CREATE TEMP TABLE IF NOT EXISTS batch_breakdown (
    link_id bigint, hour bigint, dimension text, value text, clicks bigint, human_clicks bigint
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS batch_visitor_sets (link_id bigint, hour bigint, is_bot boolean, visitors bigint[])
    ON COMMIT DELETE ROWS;
"""
COPY_BREAKDOWN = "COPY batch_breakdown (link_id, hour, dimension, value, clicks, human_clicks) FROM STDIN"
COPY_VISITORS = "COPY batch_visitor_sets (link_id, hour, is_bot, visitors) FROM STDIN"


def copy_text(value: str) -> str:
    """`value` escaped for PostgreSQL's COPY text format."""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        value = value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return value


def breakdown_rows(totals: Mapping[tuple[str, int, str, str], list[int]]) -> bytes:
    """COPY text of batch_breakdown from [clicks, human clicks] by (link,
    hour, dimension, value)."""
    return "".join(
        f"{link}\t{hour}\t{dimension}\t{copy_text(value)}\t{n}\t{human}\n"
        for (link, hour, dimension, value), (n, human) in totals.items()
    ).encode("utf-8", "replace")


def visitor_rows(sets: Iterable[tuple[str, int, bool, set[int]]]) -> bytes:
    """COPY text of batch_visitor_sets from (link, hour, bot, visitor hashes)."""
    return "".join(
        f"{link}\t{hour}\t{'t' if bot else 'f'}\t{{{','.join(map(str, hashes))}}}\n" for link, hour, bot, hashes in sets
    ).encode()


# batch_breakdown from the rows of a data-modifying CTE `new` with a click's
# link_id, occurred_at, is_bot and a column per dimension: what the importer
# counts when only some of a batch's clicks were new (importer.py).
BREAKDOWN_OF_NEW = f"""
INSERT INTO batch_breakdown (link_id, hour, dimension, value, clicks, human_clicks)
SELECT link_id, floor(extract(epoch FROM occurred_at) / 3600)::bigint, d.dimension, d.value,
       count(*), count(*) FILTER (WHERE NOT is_bot)
FROM new, LATERAL (VALUES {", ".join(f"('{dimension}', {dimension})" for dimension in DIMENSIONS)})
    d (dimension, value)
WHERE d.value IS NOT NULL
GROUP BY 1, 2, 3, 4
"""

# Adding to the rollups, from a source of (link_id, bucket, clicks,
# human_clicks, visitor_sketch, human_visitor_sketch) rows, one per key.
# Rows go in key order so that two importers updating the same rollup rows
# lock them in the same order. A visitor count never goes down, nor above the clicks.
_ADD_ROLLUP = """
INSERT INTO click_rollup_{g} AS r (link_id, bucket, clicks, human_clicks, visitors, human_visitors,
                                   visitor_sketch, human_visitor_sketch)
SELECT link_id, bucket, clicks, human_clicks,
       least(clicks, round(hll_cardinality(visitor_sketch))),
       least(human_clicks, round(coalesce(hll_cardinality(human_visitor_sketch), 0))),
       visitor_sketch, human_visitor_sketch
FROM ({source}) s (link_id, bucket, clicks, human_clicks, visitor_sketch, human_visitor_sketch)
ORDER BY 1, 2
ON CONFLICT (link_id, bucket) DO UPDATE SET
    clicks = r.clicks + EXCLUDED.clicks,
    human_clicks = r.human_clicks + EXCLUDED.human_clicks,
    visitor_sketch = hll_union(r.visitor_sketch, EXCLUDED.visitor_sketch),
    human_visitor_sketch = hll_union(r.human_visitor_sketch, EXCLUDED.human_visitor_sketch),
    visitors = greatest(r.visitors, least(
        r.clicks + EXCLUDED.clicks, round(hll_cardinality(hll_union(r.visitor_sketch, EXCLUDED.visitor_sketch))))),
    human_visitors = greatest(r.human_visitors, least(
        r.human_clicks + EXCLUDED.human_clicks,
        round(coalesce(hll_cardinality(hll_union(r.human_visitor_sketch, EXCLUDED.human_visitor_sketch)), 0))))
"""
# ... from a source of (link_id, bucket, dimension, value, clicks, human_clicks), one per key.
_ADD_BREAKDOWN = """
INSERT INTO click_breakdown_{g} AS r (link_id, bucket, dimension, value, clicks, human_clicks)
SELECT * FROM ({source}) s ORDER BY 1, 2, 3, 4
ON CONFLICT (link_id, bucket, dimension, value) DO UPDATE SET
    clicks = r.clicks + EXCLUDED.clicks,
    human_clicks = r.human_clicks + EXCLUDED.human_clicks
"""

# A bucket of the hour tables and of the day tables, from an hour's number since the epoch.
_HOUR_BUCKET = "timestamptz 'epoch' + hour * interval '1 hour'"
_DAY_BUCKET = "timestamptz 'epoch' + (hour / 24) * interval '24 hours'"

# A batch's rollups, from its temporary tables, in one statement: its rows
# per link and hour (`hours`: clicks and visitor sketches) go to the hour
# table; its late hours, those before the day fold's mark, to the six-hour
# table as well, and those six-hour rows, united four at a time, to the day
# table (a late click goes into those directly; the fold adds the rest).
# Every click is in each dimension once, so the clicks of one dimension are
# the batch's clicks. The join keeps only the hours with clicks counted now:
# the visitors of clicks that were stored already are in the sketches
# already, and adding them again changes nothing. FOR SHARE: a fold waits
# for this transaction, or this one sees where the fold got to
# (docs/rollups.md, "Exactly once").
_LATE = "hour < (SELECT extract(epoch FROM folded_before) / 3600 FROM click_day_fold FOR SHARE)"
_BATCH_ROLLUPS = f"""
WITH counts AS (
    SELECT link_id, hour, sum(clicks) AS clicks, sum(human_clicks) AS human_clicks
    FROM batch_breakdown WHERE dimension = 'browser' GROUP BY 1, 2
), sketches AS (
    SELECT link_id, hour,
           hll_add_agg(visitor::hll_hashval, {HLL}) AS visitor_sketch,
           coalesce(hll_add_agg(visitor::hll_hashval, {HLL}) FILTER (WHERE NOT is_bot), hll_empty({HLL}))
               AS human_visitor_sketch
    FROM batch_visitor_sets, unnest(visitors) visitor GROUP BY 1, 2
), hours AS MATERIALIZED (
    SELECT c.link_id, c.hour, c.clicks, c.human_clicks, s.visitor_sketch, s.human_visitor_sketch
    FROM counts c JOIN sketches s USING (link_id, hour)
), six_hours AS MATERIALIZED (
    SELECT link_id, hour / 6 AS six_hours, sum(clicks) AS clicks, sum(human_clicks) AS human_clicks,
           hll_union_agg(visitor_sketch) AS visitor_sketch, hll_union_agg(human_visitor_sketch) AS human_visitor_sketch
    FROM hours WHERE {_LATE} GROUP BY 1, 2
), add_hours AS ({
    _ADD_ROLLUP.format(
        g="hour",
        source=f"SELECT link_id, {_HOUR_BUCKET}, clicks, human_clicks, visitor_sketch, human_visitor_sketch FROM hours",
    )
}), add_six_hours AS ({
    _ADD_ROLLUP.format(
        g="6h",
        source="SELECT link_id, timestamptz 'epoch' + six_hours * interval '6 hours', clicks, human_clicks, "
        "visitor_sketch, human_visitor_sketch FROM six_hours",
    )
})
{
    _ADD_ROLLUP.format(
        g="day",
        source="SELECT link_id, timestamptz 'epoch' + (six_hours / 4) * interval '24 hours', sum(clicks), "
        "sum(human_clicks), hll_union_agg(visitor_sketch), hll_union_agg(human_visitor_sketch) "
        "FROM six_hours GROUP BY 1, 2",
    )
}"""
# The breakdowns of a batch's late hours, in one statement: per UTC day to
# the day table, and those of days the fold has gone past whole per month
# to the month table (the fold adds the day the mark is in once it is over).
_LATE_BREAKDOWNS = f"""
WITH days (link_id, bucket, dimension, value, clicks, human_clicks) AS MATERIALIZED (
    SELECT link_id, {_DAY_BUCKET}, dimension, value, sum(clicks), sum(human_clicks)
    FROM batch_breakdown WHERE {_LATE} GROUP BY 1, 2, 3, 4
), add_days AS ({_ADD_BREAKDOWN.format(g="day", source="SELECT * FROM days")})
{
    _ADD_BREAKDOWN.format(
        g="month",
        source=f"SELECT link_id, {MONTH_OF.format(bucket='bucket')}, dimension, value, sum(clicks), "
        f"sum(human_clicks) FROM days WHERE bucket < (SELECT {MONTHS_BEFORE} FROM click_day_fold) "
        "GROUP BY 1, 2, 3, 4",
    )
}"""
_TOTALS = """
INSERT INTO link_click_totals AS t (link_id, clicks, human_clicks)
SELECT link_id, sum(clicks), sum(human_clicks)
FROM batch_breakdown WHERE dimension = 'browser' GROUP BY 1 ORDER BY 1
ON CONFLICT (link_id) DO UPDATE SET
    clicks = t.clicks + EXCLUDED.clicks,
    human_clicks = t.human_clicks + EXCLUDED.human_clicks
"""
_BATCH_STATEMENTS = [
    _BATCH_ROLLUPS,
    # batch_breakdown has a row per link, hour, dimension and value already.
    _ADD_BREAKDOWN.format(
        g="hour", source=f"SELECT link_id, {_HOUR_BUCKET}, dimension, value, clicks, human_clicks FROM batch_breakdown"
    ),
    _LATE_BREAKDOWNS,
    _TOTALS,
]


def add_batch(cursor) -> None:
    """Adds what batch_breakdown and batch_visitor_sets hold, in the caller's transaction."""
    for statement in _BATCH_STATEMENTS:
        cursor.execute(statement)


_CARRIED_TOTALS = """
INSERT INTO link_click_totals AS t (link_id, clicks, human_clicks)
SELECT link_id, clicks, clicks FROM unnest(%s::bigint[], %s::bigint[]) s (link_id, clicks) ORDER BY 1
ON CONFLICT (link_id) DO UPDATE SET
    clicks = t.clicks + EXCLUDED.clicks,
    human_clicks = t.human_clicks + EXCLUDED.human_clicks
"""


def add_carried_totals(cursor, totals: dict[int, int]) -> None:
    """Adds human clicks to links' all-time totals alone, in the caller's
    transaction: visits another shortener counted, leaving bots out, but
    cannot list (docs/importing.md), which no hour of the rollups holds."""
    if totals:
        ids = sorted(totals)
        cursor.execute(_CARRIED_TOTALS, [ids, [totals[link_id] for link_id in ids]])


# --- the day fold --------------------------------------------------------------

_FOLDED_HOURS = "bucket >= %(since)s AND bucket < %(until)s"
# The days the fold goes past whole, which it adds to the month breakdowns:
# from the day of `since` to the day of `until`.
_DAY_OF_SINCE = DAY_OF.format(bucket="%(since)s")
_DAY_OF_UNTIL = DAY_OF.format(bucket="%(until)s")
_FOLDED_DAYS = f"bucket >= {_DAY_OF_SINCE} AND bucket < {_DAY_OF_UNTIL}"
# The links whose hours or days are folded, locked against deletion until
# the fold commits: a link deleted first has no rows left to fold, and one
# deleted after loses the rows made from them (link_delete_rollups). A
# link has rows on a day if it has hours on it.
_LOCK_FOLDED_LINKS = f"""
SELECT id FROM links_link
WHERE id IN (
    SELECT DISTINCT link_id FROM click_rollup_hour
    WHERE bucket >= CASE WHEN {_DAY_OF_UNTIL} > {_DAY_OF_SINCE} THEN {_DAY_OF_SINCE} ELSE %(since)s END
      AND bucket < %(until)s
)
ORDER BY id FOR KEY SHARE
"""
_FOLD_STATEMENTS = [
    _LOCK_FOLDED_LINKS,
    _ADD_ROLLUP.format(
        g="day",
        source=f"""
        SELECT link_id, {DAY_OF_BUCKET}, sum(clicks), sum(human_clicks), hll_union_agg(visitor_sketch),
               hll_union_agg(human_visitor_sketch)
        FROM click_rollup_hour WHERE {_FOLDED_HOURS} GROUP BY 1, 2""",
    ),
    _ADD_ROLLUP.format(
        g="6h",
        source=f"""
        SELECT link_id, {SIX_HOURS_OF.format(bucket="bucket")}, sum(clicks), sum(human_clicks),
               hll_union_agg(visitor_sketch), hll_union_agg(human_visitor_sketch)
        FROM click_rollup_hour WHERE {_FOLDED_HOURS} GROUP BY 1, 2""",
    ),
    _ADD_BREAKDOWN.format(
        g="day",
        source=f"""
        SELECT link_id, {DAY_OF_BUCKET}, dimension, value, sum(clicks), sum(human_clicks)
        FROM click_breakdown_hour WHERE {_FOLDED_HOURS} GROUP BY 1, 2, 3, 4""",
    ),
    # From the hours of the days gone past whole, every click of them, late
    # ones too: the hour table's BRIN index finds them, where the day table,
    # keyed by link first, would be read whole at every fold.
    _ADD_BREAKDOWN.format(
        g="month",
        source=f"""
        SELECT link_id, {MONTH_OF.format(bucket="bucket")}, dimension, value, sum(clicks), sum(human_clicks)
        FROM click_breakdown_hour WHERE {_FOLDED_DAYS} GROUP BY 1, 2, 3, 4""",
    ),
    "UPDATE click_day_fold SET folded_before = %(until)s",
]


def fold_days(*, until: datetime) -> tuple[datetime, datetime]:
    """Adds the closed hours before `until` (rounded down to the hour) that
    are not in the day tables yet, and the days it goes past whole to the
    month breakdowns; returns the hours folded, [since, until),
    empty if there were none. One transaction; safe to run from several
    importers at once."""
    until = until.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT folded_before FROM click_day_fold")
        since = cursor.fetchone()[0]
        if since >= until:
            return since, since
        with transaction.atomic():
            cursor.execute("SELECT folded_before FROM click_day_fold FOR UPDATE")
            since = cursor.fetchone()[0]
            if since >= until:
                return since, since
            for statement in _FOLD_STATEMENTS:
                cursor.execute(statement, {"since": since, "until": until})
    log.info("folded the hours from %s to %s into the day rollups", since, until)
    return since, until


# --- a link deleted -------------------------------------------------------------

# Every table of the rollups and totals, each keyed by link first.
ROLLUP_TABLES = (
    "click_rollup_hour",
    "click_rollup_day",
    "click_rollup_6h",
    "click_breakdown_hour",
    "click_breakdown_day",
    "click_breakdown_month",
    "link_click_totals",
)


# A link's hour rows, deleted, as the rows (bucket, clicks) of a
# data-modifying CTE: the statement that deletes its raw clicks deletes them
# too, and records what the accounting counted of them (deletions.py).
LINK_HOURS_DELETE = "DELETE FROM click_rollup_hour WHERE link_id = %(link)s RETURNING bucket, clicks"


def link_delete_rollups(cursor, link_id: int) -> None:
    """Deletes a link's rollups and totals but its hour rows (gone with
    LINK_HOURS_DELETE), in the caller's transaction, which must hold the
    link (FOR UPDATE, or its row deleted)."""
    for table in ROLLUP_TABLES:
        if table != "click_rollup_hour":
            cursor.execute(f"DELETE FROM {table} WHERE link_id = %s", [link_id])


# --- a team's retention ------------------------------------------------------------

# The rollups of the hours, days and months before a team's retention
# cutoff (a UTC midnight; a month's rows when the month ended before it),
# each with its key, in the order a purge takes them (clicks/retention.py):
# the hour rows first, whose clicks the accounting counts.
PURGED_ROLLUPS = (
    ("click_rollup_hour", "link_id, bucket", "%(cutoff)s"),
    ("click_breakdown_hour", "link_id, bucket, dimension, value", "%(cutoff)s"),
    ("click_rollup_6h", "link_id, bucket", "%(cutoff)s"),
    ("click_rollup_day", "link_id, bucket", "%(cutoff)s"),
    ("click_breakdown_day", "link_id, bucket, dimension, value", "%(cutoff)s"),
    ("click_breakdown_month", "link_id, bucket, dimension, value", MONTH_OF.format(bucket="%(cutoff)s")),
)


def team_rows_before(table: str, key: str, before: str) -> str:
    """A bounded batch of a team's rows of `table` before `before`, deleted,
    as a data-modifying CTE's statement RETURNING them whole. Rows an
    import or a fold holds are skipped (SKIP LOCKED), for the next purge:
    the purge waits for neither, and neither waits long for it. In no
    order: one that never waits needs none against deadlocks, and each
    batch reads only as far as its LIMIT."""
    return f"""
    DELETE FROM {table} WHERE ({key}) IN (
        SELECT {key} FROM {table}
        WHERE link_id IN (SELECT id FROM links_link WHERE team_id = %(team)s) AND bucket < {before}
        LIMIT %(rows)s FOR UPDATE SKIP LOCKED
    ) RETURNING *"""

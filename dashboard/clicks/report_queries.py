"""How a report reads its figures: the rollup rows that hold a range
(whole UTC days from the day tables, hours at either end and not folded
yet), and the statements of one report over them, or over the raw clicks
under filters, within REPORT_RAW_TIMEOUT_MS (clicks/reports.py has the
reports themselves; docs/rollups.md what they count)."""

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from typing import NamedTuple

import psycopg
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import OperationalError, connections, transaction

from slingshot.db import reports_db

from .calendar import EPOCH, HOUR, bucket_end, bucket_start, hour_ceil, is_utc, next_bucket, zone_name
from .rollups import DAY_OF, DIMENSIONS, NOT_FOLDED, NOT_IN_MONTHS, SIX_HOURS_OF


def reports_connection():
    """The connection reports read with: the database replica when there is
    one (slingshot/db.py), so that heavy reports never slow the import."""
    return connections[reports_db()]


@contextmanager
def one_snapshot() -> Iterator[str]:
    """A transaction on the reports' connection (its alias given) in which
    every read sees the same committed clicks (REPEATABLE READ): figures read
    one after another, such as a link's all-time totals and its report, count
    the same clicks even while the importer commits batches between them.
    Within a transaction already begun (a test's), that transaction's."""
    alias = reports_db()
    connection = connections[alias]
    begins = not connection.in_atomic_block
    with transaction.atomic(using=alias):
        if begins:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield alias


class Point(NamedTuple):
    bucket: datetime  # start of the hour, day, week or month, in the report's zone
    clicks: int
    visitors: int | None  # distinct visitors in the bucket; None under filters (docs/rollups.md)


@dataclass(frozen=True)
class Totals:
    clicks: int = 0  # as the report counts them: without bots unless include_bots
    visitors: int | None = 0  # distinct over the whole range; None under filters
    bots: int = 0  # clicks by bots in the range, counted or not


# A series of local days in a zone whose days are not UTC days reads rows
# of six hours and of hours, each with its visitor sketch: a year's are some
# 4 MB to sort, which PostgreSQL's default work_mem (4 MB) may sort on disk.
SKETCHES_WORK_MEM = "32MB"
SIX_HOURS = timedelta(hours=6)
MIDDAY = timedelta(hours=12)
DAY = timedelta(days=1)


class ReportTooLarge(ValidationError):
    """A report from the raw clicks that would take longer than REPORT_RAW_TIMEOUT_MS."""


# --- which rollup rows a range reads ----------------------------------------------

# (grain, from the first hour not folded yet or, of days, the first day not
# in the month breakdowns yet, lo, hi): rows of the hour, day or month tables
# with buckets in [lo, hi).
Span = tuple[str, bool, datetime, datetime]


def _spans(start: datetime, end: datetime, *, months: bool = False) -> list[Span]:
    """The rollup rows that hold [start, end) (whole UTC hours), each click
    once: hours at either end, whole UTC days from the day tables (with
    `months`, whole UTC months from the month table, which only the
    breakdowns have, and their days not in it yet from the day table), and
    the hours of those days not folded into them yet."""
    whole_from = bucket_end(start, "day")
    whole_to = bucket_start(end, "day")
    if whole_from >= whole_to:
        return [("hour", False, start, end)]
    folded = [("day", False, whole_from, whole_to)]
    # Asked in this order, no month after the calendar's last is made.
    if months and bucket_start(whole_from, "month") < (month_to := bucket_start(whole_to, "month")):
        month_from = bucket_end(whole_from, "month")
        folded = [
            ("day", False, whole_from, month_from),
            ("month", False, month_from, month_to),
            ("day", True, month_from, month_to),
            ("day", False, month_to, whole_to),
        ]
    spans = [
        ("hour", False, start, whole_from),
        *folded,
        ("hour", True, whole_from, whole_to),
        ("hour", False, whole_to, end),
    ]
    return [span for span in spans if span[2] < span[3]]


def _span_sql(table: str, span: Span, ids: list[int], where: str = "", where_params: tuple = ()) -> tuple[str, list]:
    """FROM and WHERE of a span's rows of click_rollup_* or click_breakdown_* (`table` without the grain)."""
    grain, unfolded, lo, hi = span
    floor = {"hour": NOT_FOLDED, "day": NOT_IN_MONTHS}[grain] if unfolded else "%s"
    return (
        f"FROM {table}_{grain} WHERE link_id = ANY(%s) AND bucket >= {floor} AND bucket < %s{where}",
        [ids, lo, hi, *where_params],
    )


def _first_hours(interval: str, zone: tzinfo, start: datetime, end: datetime) -> Iterator[datetime]:
    """The first UTC hour of each bucket after the one `start` is in, while
    before `end`: the hour that starts in it (hour_ceil)."""
    boundary = next_bucket(bucket_start(start, interval, zone), interval, zone)
    while (first := hour_ceil(boundary)) < end:
        yield first
        boundary = next_bucket(boundary, interval, zone)


def _split_blocks(interval: str, zone: tzinfo, start: datetime, end: datetime) -> list[datetime]:
    """The starts of the six UTC hours in [start, end) that a bucket's first
    hour falls inside of: their hours are in two buckets."""
    blocks = []
    for first in _first_hours(interval, zone, start, end):
        if first > start and (into := first.timestamp() % SIX_HOURS.total_seconds()):
            blocks.append(first - timedelta(seconds=into))
    return blocks


def _local_parts(
    interval: str, zone: tzinfo, ids: list[int], start: datetime, end: datetime, columns: str
) -> tuple[list[str], list]:
    """SELECTs of link_id, the bucket as k and `columns` of the rows that
    hold [start, end) (whole UTC hours) for a series of local days, weeks or
    months of a zone whose days are not UTC days: the rows of click_rollup_6h
    whose six hours are in the range, folded and in one bucket, and the hour
    rows of every other six hours (mostly those a local midnight splits, and
    any a row of six hours is missing for). Each click is counted once."""
    whole = (
        "s.bucket >= %s AND s.bucket <= %s AND s.bucket <= (SELECT folded_before FROM click_day_fold)"
        " - interval '6 hours' AND s.bucket <> ALL(%s::timestamptz[])"
    )
    select = f"SELECT link_id, {_bucket_key(interval, zone)} AS k, {columns}"
    within = [start, end - SIX_HOURS, _split_blocks(interval, zone, start, end)]
    return [
        f"{select} FROM click_rollup_6h s WHERE link_id = ANY(%s) AND {whole}",
        f"{select} FROM click_rollup_hour h WHERE link_id = ANY(%s) AND bucket >= %s AND bucket < %s"
        " AND NOT EXISTS (SELECT FROM click_rollup_6h s WHERE s.link_id = h.link_id"
        f" AND s.bucket = {SIX_HOURS_OF.format(bucket='h.bucket')} AND {whole})",
    ], [ids, *within, ids, start, end, *within]


# A UTC day's row of a breakdown goes to the bucket of its midday (see _moved_hours).
MIDDAY_OF_DAY = "(bucket + interval '12 hours')"
MIDDAY_OF_HOUR = f"({DAY_OF.format(bucket='bucket')} + interval '12 hours')"


def _moved_hours(interval: str, zone: tzinfo, start: datetime, end: datetime) -> list[datetime]:
    """The hours of the whole UTC days in [start, end) that are not in the
    local bucket of their day's midday, for a series of local days, weeks or
    months of a zone whose days are not UTC days: those a bucket that begins
    on the day holds on the far side of the day's midday from where it
    begins. A bucket is at least 23 hours long, so no two begin on one side
    of a midday, and each hour is named once."""
    whole_from, whole_to = bucket_end(start, "day"), bucket_start(end, "day")
    moved = []
    for first in _first_hours(interval, zone, whole_from, whole_to):
        day = bucket_start(first, "day")
        if first <= day + MIDDAY:
            hours, since = (first - day) // HOUR, day
        else:
            hours, since = (day + DAY - first) // HOUR, first
        moved += [since + n * HOUR for n in range(hours)]
    return moved


def _day_parts(
    interval: str,
    zone: tzinfo,
    table: str,
    ids: list[int],
    start: datetime,
    end: datetime,
    counted: str,
    extra: str,
    filtered: tuple,
) -> tuple[list[str], list]:
    """SELECTs of link_id, the bucket as k, the clicks and `extra` of the
    rows of `table` (under `filtered`: a condition and its parameters) that
    hold [start, end) (whole UTC hours) for a series of days, weeks or
    months, read from whole UTC days where they can (_spans). In a zone
    whose days are UTC days, each row counts in the bucket it begins in. In
    another, a UTC day's row counts in the bucket of its midday, and its
    hours in another bucket (_moved_hours, an index lookup each) are taken
    out of it and counted in theirs; this reads the clicks alone, with no
    `extra`, and is for the breakdowns, which have no rows of six hours (a
    series without a filter reads those, _local_parts). Each click is
    counted once."""
    where, where_params = filtered
    utc = is_utc(zone)
    parts, params = [], []
    for span in _spans(start, end):
        sql, span_params = _span_sql(table, span, ids, where, where_params)
        key = _bucket_key(interval, zone, MIDDAY_OF_DAY if span[0] == "day" and not utc else "bucket")
        parts.append(f"SELECT link_id, {key} AS k, {counted} AS clicks{extra} {sql}")
        params += span_params
    if not utc and (moved := _moved_hours(interval, zone, start, end)):
        into, out_of = _bucket_key(interval, zone), _bucket_key(interval, zone, MIDDAY_OF_HOUR)
        parts.append(
            f"SELECT link_id, moved.k, moved.clicks FROM {table}_hour,"
            f" LATERAL (VALUES ({into}, {counted}), ({out_of}, -{counted})) moved (k, clicks)"
            " WHERE link_id = ANY(%s) AND bucket = ANY(%s::timestamptz[])"
            f" AND bucket < (SELECT folded_before FROM click_day_fold){where}"
        )
        params += [ids, moved, *where_params]
    return parts, params


def _bucket_key(interval: str, zone: tzinfo, column: str = "bucket") -> str:
    """SQL of the bucket a row's hour (or day) falls in: an hour as it is,
    a local day, week or month as a timestamp without time zone."""
    if interval == "hour":
        return f"date_trunc('hour', {column})"
    return f"date_trunc('{interval}', {column} AT TIME ZONE '{zone_name(zone)}')"


def _from_key(interval: str, zone: tzinfo):
    """Python of the bucket from the epoch seconds of _bucket_key."""
    if interval == "hour":
        return lambda seconds: datetime.fromtimestamp(seconds, zone)
    return lambda seconds: (EPOCH + timedelta(seconds=seconds)).replace(tzinfo=zone)


@dataclass
class Report:
    ids: list[int]
    include_bots: bool
    zone: tzinfo
    filters: dict[str, str] = field(default_factory=dict)

    @property
    def counted(self) -> str:
        return "clicks" if self.include_bots else "human_clicks"

    def _source(self) -> tuple[str, str, tuple]:
        """The rollup tables a report reads, and the condition on their rows."""
        if self.filters:
            ((dimension, value),) = self.filters.items()
            return "click_breakdown", " AND dimension = %s AND value = %s", (dimension, value)
        return "click_rollup", "", ()

    def series(self, start: datetime, end: datetime, interval: str) -> list[Point]:
        table, where, where_params = self._source()
        counted, filtered = self.counted, bool(self.filters)
        visitors = "visitors" if self.include_bots else "human_visitors"
        sketch = "visitor_sketch" if self.include_bots else "human_visitor_sketch"
        sorts_sketches = False
        if interval == "hour":
            # One rollup row per link and hour: its visitors need no union.
            sql, params = _span_sql(table, ("hour", False, start, end), self.ids, where, where_params)
            columns = "NULL::bigint" if filtered else f"sum({visitors})::bigint"
            query = (
                f"SELECT extract(epoch FROM bucket)::bigint, sum({counted})::bigint, {columns} {sql} "
                f"GROUP BY bucket HAVING sum({counted}) > 0 ORDER BY bucket"
            )
        else:
            # Whole UTC days from the day tables, and in a zone whose days
            # are not UTC days the hours to move between buckets
            # (_day_parts); without a filter, such a zone's days from rows
            # of six hours where they can (_local_parts). A link's rows of
            # one bucket add up, and their visitors are the union of the
            # sketches.
            sorts_sketches = not (filtered or is_utc(self.zone))
            extra = "" if filtered else f", {visitors}, {sketch}"
            if sorts_sketches:
                parts, params = _local_parts(interval, self.zone, self.ids, start, end, f"{counted}{extra}")
            else:
                parts, params = _day_parts(
                    interval, self.zone, table, self.ids, start, end, counted, extra, (where, where_params)
                )
            union = " UNION ALL ".join(parts)
            if filtered:
                query = (
                    f"SELECT extract(epoch FROM k)::bigint, sum(clicks)::bigint, NULL::bigint FROM ({union}) parts "
                    "GROUP BY k HAVING sum(clicks) > 0 ORDER BY k"
                )
            else:
                query = (
                    f"WITH parts (link_id, k, clicks, visitors, sketch) AS ({union}), per_link AS ("
                    " SELECT k, sum(clicks) AS clicks, CASE WHEN count(*) = 1 THEN max(visitors) ELSE greatest("
                    "  max(visitors), least(sum(clicks), round(coalesce(hll_cardinality(hll_union_agg(sketch)), 0))))"
                    "  END AS visitors"
                    " FROM parts GROUP BY link_id, k"
                    ") SELECT extract(epoch FROM k)::bigint, sum(clicks)::bigint, sum(visitors)::bigint "
                    "FROM per_link GROUP BY k HAVING sum(clicks) > 0 ORDER BY k"
                )
        reports = reports_connection()
        with transaction.atomic(using=reports.alias) if sorts_sketches else nullcontext(), reports.cursor() as cursor:
            if sorts_sketches:
                cursor.execute("SELECT set_config('work_mem', %s, true)", [SKETCHES_WORK_MEM])
            cursor.execute(query, params)
            rows = cursor.fetchall()
        to_bucket = _from_key(interval, self.zone)
        return [Point(to_bucket(seconds), clicks, visitors) for seconds, clicks, visitors in rows]

    def totals(self, periods: list[tuple[str, datetime, datetime]]) -> dict[str, Totals]:
        """Each period's totals in one query: clicks and bots added up,
        visitors the union of every sketch of the range, per link."""
        table, where, where_params = self._source()
        sketch = "visitor_sketch" if self.include_bots else "human_visitor_sketch"
        parts, params = [], []
        for name, start, end in periods:
            for span in _spans(start, end):
                sql, span_params = _span_sql(table, span, self.ids, where, where_params)
                extra = "" if self.filters else f", {sketch}"
                parts.append(f"SELECT %s AS period, link_id, clicks, human_clicks{extra} {sql}")
                params += [name, *span_params]
        if not parts:
            return {name: Totals(visitors=None if self.filters else 0) for name, _, _ in periods}
        union = " UNION ALL ".join(parts)
        if self.filters:
            query = (
                f"SELECT period, sum(clicks)::bigint, sum(human_clicks)::bigint, NULL::bigint FROM ({union}) parts "
                "GROUP BY period"
            )
        else:
            query = (
                f"WITH parts (period, link_id, clicks, human_clicks, sketch) AS ({union}), per_link AS ("
                f" SELECT period, sum(clicks) AS clicks, sum(human_clicks) AS human_clicks,"
                f"  least(sum({self.counted}), round(coalesce(hll_cardinality(hll_union_agg(sketch)), 0))) AS visitors"
                " FROM parts GROUP BY period, link_id"
                ") SELECT period, sum(clicks)::bigint, sum(human_clicks)::bigint, sum(visitors)::bigint "
                "FROM per_link GROUP BY period"
            )
        with reports_connection().cursor() as cursor:
            cursor.execute(query, params)
            found = {row[0]: row[1:] for row in cursor.fetchall()}
        totals = {}
        for name, _, _ in periods:
            clicks, human, visitors = found.get(name, (0, 0, None if self.filters else 0))
            totals[name] = Totals(clicks=clicks if self.include_bots else human, visitors=visitors, bots=clicks - human)
        return totals

    def breakdowns(self, start: datetime, end: datetime, top: int | None) -> dict[str, list[tuple[str, int]]]:
        parts, params = [], []
        for span in _spans(start, end, months=True):
            sql, span_params = _span_sql("click_breakdown", span, self.ids)
            parts.append(f"SELECT dimension, value, {self.counted} AS clicks {sql}")
            params += span_params
        breakdowns: dict[str, list[tuple[str, int]]] = {dimension: [] for dimension in DIMENSIONS}
        if not parts:
            return breakdowns
        with reports_connection().cursor() as cursor:
            cursor.execute(
                f"SELECT dimension, value, total FROM ("
                f" SELECT dimension, value, sum(clicks)::bigint AS total,"
                f"  row_number() OVER (PARTITION BY dimension ORDER BY sum(clicks) DESC, value) AS rank"
                f" FROM ({' UNION ALL '.join(parts)}) parts GROUP BY dimension, value HAVING sum(clicks) > 0"
                # `rule`, whose values are few (a link has at most 30 rules and destinations), is kept whole.
                f") ranked WHERE %s::bigint IS NULL OR rank <= %s OR dimension = 'rule'"
                f" ORDER BY dimension, total DESC, value",
                [*params, top, top],
            )
            for dimension, value, total in cursor.fetchall():
                breakdowns[dimension].append((value, total))
        return breakdowns

    # --- from the raw clicks, under filters ------------------------------------------

    def raw(self):
        """A transaction in which statements end after REPORT_RAW_TIMEOUT_MS,
        and their cancellation is a ReportTooLarge."""
        return RawReport()

    def _raw_where(self, start: datetime, end: datetime) -> tuple[str, list]:
        where = ["link_id = ANY(%s)", "occurred_at >= %s", "occurred_at < %s"]
        params: list = [self.ids, start, end]
        for dimension, value in self.filters.items():
            where.append(f"{dimension} = %s")
            params.append(value)
        return " AND ".join(where), params

    def raw_series(self, start: datetime, end: datetime, interval: str) -> list[Point]:
        # A click's bucket is that of its UTC hour, as in the rollups.
        key = _bucket_key(interval, self.zone, "date_trunc('hour', occurred_at)")
        where, params = self._raw_where(start, end)
        if not self.include_bots:
            where += " AND NOT is_bot"
        with reports_connection().cursor() as cursor:
            cursor.execute(
                f"SELECT extract(epoch FROM {key})::bigint AS k, count(*) FROM clicks WHERE {where} "
                "GROUP BY k ORDER BY k",
                params,
            )
            rows = cursor.fetchall()
        to_bucket = _from_key(interval, self.zone)
        return [Point(to_bucket(seconds), clicks, None) for seconds, clicks in rows]

    def raw_totals(self, periods: list[tuple[str, datetime, datetime]]) -> dict[str, Totals]:
        totals = {}
        with reports_connection().cursor() as cursor:
            for name, start, end in periods:
                where, params = self._raw_where(start, end)
                cursor.execute(f"SELECT count(*), count(*) FILTER (WHERE is_bot) FROM clicks WHERE {where}", params)
                clicks, bots = cursor.fetchone()
                totals[name] = Totals(clicks=clicks if self.include_bots else clicks - bots, visitors=None, bots=bots)
        return totals

    def raw_breakdowns(self, start: datetime, end: datetime, top: int | None) -> tuple[dict, int]:
        """Breakdowns of the latest REPORT_FILTER_SAMPLE clicks that match, and how many those were."""
        where, params = self._raw_where(start, end)
        if not self.include_bots:
            where += " AND NOT is_bot"
        columns = ", ".join(DIMENSIONS)
        sets = ", ".join(f"({dimension})" for dimension in DIMENSIONS)
        # GROUPING() says which set a row is of: a value may be NULL (the rule of a click no rule served).
        grouped = ", ".join(f"GROUPING({dimension})" for dimension in DIMENSIONS)
        with reports_connection().cursor() as cursor:
            cursor.execute(
                f"WITH sample AS (SELECT {columns} FROM clicks WHERE {where} ORDER BY occurred_at DESC LIMIT %s) "
                f"SELECT {columns}, {grouped}, count(*) FROM sample GROUP BY GROUPING SETS ({sets})",
                [*params, settings.REPORT_FILTER_SAMPLE],
            )
            rows = cursor.fetchall()
        counts: dict[str, list[tuple[str, int]]] = {dimension: [] for dimension in DIMENSIONS}
        width = len(DIMENSIONS)
        for row in rows:
            index = row[width : 2 * width].index(0)
            if row[index] is not None:
                counts[DIMENSIONS[index]].append((row[index], row[-1]))
        sampled = sum(n for _, n in counts[DIMENSIONS[0]])
        for items in counts.values():
            items.sort(key=lambda item: (-item[1], item[0]))
            if top is not None:
                del items[top:]
        return counts, sampled


class RawReport:
    """statement_timeout = REPORT_RAW_TIMEOUT_MS for the statements of one
    transaction, and QueryCanceled as a ReportTooLarge."""

    MESSAGE = (
        "This report reads too many clicks to answer in time: choose a shorter range, "
        "or filter by one value only (answered from the rollups)."
    )

    def __enter__(self):
        self._alias = reports_db()
        self._atomic = transaction.atomic(using=self._alias)
        self._atomic.__enter__()
        with connections[self._alias].cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(settings.REPORT_RAW_TIMEOUT_MS)])
        return self

    def __exit__(self, kind, exc, traceback):
        if exc is None:
            with connections[self._alias].cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout TO DEFAULT")
        self._atomic.__exit__(kind, exc, traceback)
        if isinstance(exc, OperationalError) and isinstance(exc.__cause__, psycopg.errors.QueryCanceled):
            raise ReportTooLarge(self.MESSAGE, code="too_large") from exc
        return False

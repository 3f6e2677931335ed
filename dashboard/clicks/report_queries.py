"""How a report reads its figures: the statements of one report over the
rollup rows that hold a range (report_spans.py), or over the raw clicks
under filters, within REPORT_RAW_TIMEOUT_MS (clicks/reports.py has the
reports themselves; docs/rollups.md what they count)."""

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import NamedTuple

import psycopg
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import OperationalError, connections, transaction

from slingshot.db import reports_db

from .calendar import is_utc
from .report_spans import bucket_key, day_parts, from_key, local_parts, span_sql, spans
from .rollups import DIMENSIONS


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


class ReportTooLarge(ValidationError):
    """A report from the raw clicks that would take longer than REPORT_RAW_TIMEOUT_MS."""


@dataclass
class Answered:
    """An answer already there, as a future that is done gives it."""

    answer: object

    def result(self):
        return self.answer


@dataclass
class Report:
    ids: list[int]
    include_bots: bool
    zone: tzinfo
    filters: dict[str, str] = field(default_factory=dict)

    @property
    def counted(self) -> str:
        return "clicks" if self.include_bots else "human_clicks"

    def alongside(self, ask, *args) -> "Answered":
        """`ask(*args)`, asked now: the request's one connection asks a statement at a time."""
        return Answered(ask(*args))

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
            sql, params = span_sql(table, ("hour", False, start, end), self.ids, where, where_params)
            columns = "NULL::bigint" if filtered else f"sum({visitors})::bigint"
            query = (
                f"SELECT extract(epoch FROM bucket)::bigint, sum({counted})::bigint, {columns} {sql} "
                f"GROUP BY bucket HAVING sum({counted}) > 0 ORDER BY bucket"
            )
        else:
            # Whole UTC days from the day tables, and in a zone whose days
            # are not UTC days the hours to move between buckets
            # (day_parts); without a filter, such a zone's days from rows
            # of six hours where they can (local_parts). A link's rows of
            # one bucket add up, and their visitors are the union of the
            # sketches.
            sorts_sketches = not (filtered or is_utc(self.zone))
            extra = "" if filtered else f", {visitors}, {sketch}"
            if sorts_sketches:
                parts, params = local_parts(interval, self.zone, self.ids, start, end, f"{counted}{extra}")
            else:
                parts, params = day_parts(
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
        to_bucket = from_key(interval, self.zone)
        return [Point(to_bucket(seconds), clicks, visitors) for seconds, clicks, visitors in rows]

    def totals(self, periods: list[tuple[str, datetime, datetime]]) -> dict[str, Totals]:
        """Each period's totals in one query: clicks and bots added up,
        visitors the union of every sketch of the range, per link."""
        table, where, where_params = self._source()
        sketch = "visitor_sketch" if self.include_bots else "human_visitor_sketch"
        parts, params = [], []
        for name, start, end in periods:
            for span in spans(start, end):
                sql, span_params = span_sql(table, span, self.ids, where, where_params)
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

    def series_and_totals(
        self, start: datetime, end: datetime, interval: str, periods: list[tuple[str, datetime, datetime]]
    ) -> tuple[list[Point], dict[str, Totals]]:
        return self.series(start, end, interval), self.totals(periods)

    def breakdowns(self, start: datetime, end: datetime, top: int | None) -> dict[str, list[tuple[str, int]]]:
        parts, params = [], []
        for span in spans(start, end, months=True):
            sql, span_params = span_sql("click_breakdown", span, self.ids)
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
        key = bucket_key(interval, self.zone, "date_trunc('hour', occurred_at)")
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
        to_bucket = from_key(interval, self.zone)
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

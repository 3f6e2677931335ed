"""How a report reads its figures from the ClickHouse click store
(CLICK_STORE=clickhouse): the same figures as report_queries.Report reads
from PostgreSQL, asked of the cluster. Without filters, series and totals
come from the hourly rollup (`click_rollup_hour`: clicks, and visitors as
`uniqCombined` sketches, per link, hour and bot or not); under filters,
and for the breakdowns, from the raw clicks, which a column store reads by
the columns asked for alone. A link's visitors are counted over the
bucket or range, and added up over the links, as PostgreSQL's report does.
Kept to SQL that ClickHouse 18.16 and a current one both accept."""

import re
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from django.conf import settings

from .calendar import zone_name
from .clickhouse_clicks import cluster, naive_utc
from .report_queries import Point, RawReport, ReportTooLarge, Totals
from .report_spans import from_key
from .rollups import DIMENSIONS

_ZONE = re.compile(r"[A-Za-z0-9_+\-/]+")
# ClickHouse's TIMEOUT_EXCEEDED: a statement past max_execution_time.
_TIMEOUT_EXCEEDED = 159
# For a statement over the rollup whose inner GROUP BY starts with link_id:
# a link's rows all live on its shard (the rollup is sharded by link), so
# each shard finishes its own groups and sends their figures rather than
# its visitor sketches for the initiator to merge; the outer statement adds them up.
_PER_LINK_ON_EACH_SHARD = {"distributed_group_by_no_merge": 1}


def _key(interval: str, zone: tzinfo, hour: str) -> str:
    """SQL of a bucket's key as report_spans.bucket_key has it, from a UTC
    hour: the hour's epoch, or a local day, week or month's midnight as
    epoch seconds of that wall-clock time."""
    if interval == "hour":
        return f"toUInt32({hour})"
    name = zone_name(zone)
    if not _ZONE.fullmatch(name):
        raise ValueError(f"time zone {name!r}")
    local = f"toTimeZone({hour}, '{name}')"
    day = {"day": f"toDate({local})", "week": f"toMonday({local})", "month": f"toStartOfMonth({local})"}[interval]
    return f"toUInt32({day}) * 86400"


@dataclass
class ClickHouseReport:
    ids: list[int]
    include_bots: bool
    zone: tzinfo
    filters: dict[str, str] = field(default_factory=dict)

    def _execute(self, query: str, params: dict, *, raw: bool = False, settings: dict | None = None) -> list[tuple]:
        params = {"ids": tuple(self.ids) or (0,), **params}
        return raw_execute(query, params) if raw else cluster().execute(query, params, settings=settings)

    def _bots(self) -> str:
        return "" if self.include_bots else " AND is_bot = 0"

    def _raw_where(self, start: datetime, end: datetime) -> tuple[str, dict]:
        where = ["link_id IN %(ids)s", "occurred_at >= %(start)s", "occurred_at < %(end)s"]
        params = {"start": naive_utc(start), "end": naive_utc(end)}
        for index, (dimension, value) in enumerate(self.filters.items()):
            where.append(f"{dimension} = %(f{index})s")
            params[f"f{index}"] = value
        return " AND ".join(where), params

    def series(self, start: datetime, end: datetime, interval: str) -> list[Point]:
        if self.filters:
            return self.raw_series(start, end, interval)
        key = _key(interval, self.zone, "bucket")
        rows = self._execute(
            f"""SELECT k, sum(c), sum(v) FROM (
                SELECT link_id, {key} AS k, countMerge(clicks) AS c, least(uniqCombinedMerge(visitors), c) AS v
                FROM click_rollup_hour
                WHERE link_id IN %(ids)s AND bucket >= %(start)s AND bucket < %(end)s{self._bots()}
                GROUP BY link_id, k
            ) GROUP BY k HAVING sum(c) > 0 ORDER BY k""",
            {"start": naive_utc(start), "end": naive_utc(end)},
            settings=_PER_LINK_ON_EACH_SHARD,
        )
        to_bucket = from_key(interval, self.zone)
        return [Point(to_bucket(seconds), clicks, visitors) for seconds, clicks, visitors in rows]

    def totals(self, periods: list[tuple[str, datetime, datetime]]) -> dict[str, Totals]:
        if self.filters:
            return self.raw_totals(periods)
        merge = "uniqCombinedMerge(visitors)" if self.include_bots else "uniqCombinedMergeIf(visitors, is_bot = 0)"
        totals = {}
        for name, start, end in periods:
            ((clicks, human, visitors),) = self._execute(
                f"""SELECT sum(c), sum(h), sum(least(v, {"c" if self.include_bots else "h"})) FROM (
                    SELECT link_id, countMerge(clicks) AS c, countMergeIf(clicks, is_bot = 0) AS h, {merge} AS v
                    FROM click_rollup_hour WHERE link_id IN %(ids)s AND bucket >= %(start)s AND bucket < %(end)s
                    GROUP BY link_id
                )""",
                {"start": naive_utc(start), "end": naive_utc(end)},
                settings=_PER_LINK_ON_EACH_SHARD,
            )
            totals[name] = Totals(clicks=clicks if self.include_bots else human, visitors=visitors, bots=clicks - human)
        return totals

    def breakdowns(self, start: datetime, end: datetime, top: int | None) -> dict[str, list[tuple[str, int]]]:
        where, params = self._raw_where(start, end)
        counts = self._counts("clicks", where + self._bots(), params)
        return _ranked(counts, top, keep_whole=("rule",))

    # --- from the raw clicks, under filters ------------------------------------------

    def raw(self):
        """What report_queries.Report.raw is for PostgreSQL: here each raw
        statement carries its own time limit (max_execution_time)."""
        return _NoTransaction()

    def raw_series(self, start: datetime, end: datetime, interval: str) -> list[Point]:
        where, params = self._raw_where(start, end)
        key = _key(interval, self.zone, "toStartOfHour(occurred_at)")
        rows = self._execute(
            f"SELECT {key} AS k, count() FROM clicks WHERE {where}{self._bots()} GROUP BY k ORDER BY k",
            params,
            raw=True,
        )
        to_bucket = from_key(interval, self.zone)
        return [Point(to_bucket(seconds), clicks, None) for seconds, clicks in rows]

    def raw_totals(self, periods: list[tuple[str, datetime, datetime]]) -> dict[str, Totals]:
        totals = {}
        for name, start, end in periods:
            where, params = self._raw_where(start, end)
            ((clicks, bots),) = self._execute(
                f"SELECT count(), countIf(is_bot = 1) FROM clicks WHERE {where}", params, raw=True
            )
            totals[name] = Totals(clicks=clicks if self.include_bots else clicks - bots, visitors=None, bots=bots)
        return totals

    def raw_breakdowns(self, start: datetime, end: datetime, top: int | None) -> tuple[dict, int]:
        """Breakdowns of the latest REPORT_FILTER_SAMPLE clicks that match, and how many those were."""
        where, params = self._raw_where(start, end)
        sample = (
            f"SELECT * FROM clicks WHERE {where}{self._bots()}"
            " ORDER BY occurred_at DESC, occurred_ms DESC, click_id DESC LIMIT %(sample)s"
        )
        counts = self._counts(f"({sample})", "1", {**params, "sample": settings.REPORT_FILTER_SAMPLE}, raw=True)
        sampled = sum(n for _, n in counts[DIMENSIONS[0]])
        return _ranked(counts, top), sampled

    def _counts(self, source: str, where: str, params: dict, *, raw: bool = False) -> dict[str, list[tuple[str, int]]]:
        """Each dimension's values and their clicks among the rows of `source`
        that `where` keeps (a click no rule served has no `rule`): a statement
        a dimension, each reading that column alone (a subquery's `SELECT *`
        cost a year's stats page 300 ms more on 18.16, docs/benchmarks.md)."""
        parts = " UNION ALL ".join(
            f"SELECT '{dimension}' AS dimension, toString({dimension}) AS value, count() AS n FROM {source}"
            f" WHERE {where} AND {dimension} IS NOT NULL GROUP BY {dimension}"
            for dimension in DIMENSIONS
        )
        counts: dict[str, list[tuple[str, int]]] = {dimension: [] for dimension in DIMENSIONS}
        for dimension, value, n in self._execute(parts, params, raw=raw):
            counts[dimension].append((value, n))
        return counts


def raw_execute(query: str, params: dict) -> list[tuple]:
    """A statement over the raw clicks, stopped at REPORT_RAW_TIMEOUT_MS
    (max_execution_time) as a report too large, as PostgreSQL's are."""
    from clickhouse_driver.errors import ServerException

    options = {"max_execution_time": max(1, settings.REPORT_RAW_TIMEOUT_MS // 1000)}
    try:
        return cluster().execute(query, params, settings=options)
    except ServerException as error:
        if error.code == _TIMEOUT_EXCEEDED:
            raise ReportTooLarge(RawReport.MESSAGE, code="too_large") from error
        raise


def _ranked(counts: dict, top: int | None, keep_whole: tuple[str, ...] = ()) -> dict[str, list[tuple[str, int]]]:
    """Most clicks first, then by value; the `top` of each dimension but those kept whole."""
    for dimension, items in counts.items():
        items.sort(key=lambda item: (-item[1], item[0]))
        if top is not None and dimension not in keep_whole:
            del items[top:]
    return counts


class _NoTransaction:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

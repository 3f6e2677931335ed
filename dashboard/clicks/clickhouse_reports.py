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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo

from django.conf import settings

from .calendar import zone_name
from .clickhouse_clicks import cluster, moment_ms, naive_utc
from .clickhouse_deletions import Hidden, hidden_clicks
from .report_queries import Point, RawReport, ReportTooLarge, Totals
from .report_spans import from_key
from .rollups import DIMENSIONS

_EARLIEST, _LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(2105, 1, 1, tzinfo=UTC)
_ZONE = re.compile(r"[A-Za-z0-9_+\-/]+")
# ClickHouse's TIMEOUT_EXCEEDED: a statement past max_execution_time.
_TIMEOUT_EXCEEDED = 159
# For a statement over the rollup whose inner GROUP BY starts with link_id:
# a link's rows all live on its shard (the rollup is sharded by link), so
# each shard finishes its own groups and sends their figures rather than
# its visitor sketches for the initiator to merge; the outer statement adds them up.
_PER_LINK_ON_EACH_SHARD = {"distributed_group_by_no_merge": 1}
# Where a report's breakdowns are asked while its series are (ClickHouseReport.alongside).
_ALONGSIDE = ThreadPoolExecutor(max_workers=4, thread_name_prefix="clickhouse-report")


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
    hidden: Hidden | None = None  # visits deleted (clickhouse_deletions.py); None: asked of PostgreSQL

    def __post_init__(self):
        if self.hidden is None:
            self.hidden = hidden_clicks(self.ids)

    def alongside(self, ask, *args) -> Future:
        """`ask(*args)` on a thread of its own, with its own connection
        (clickhouse_clicks.cluster), while the caller asks the rest: the
        nodes work on both at once. Only the cluster is asked there."""
        return _ALONGSIDE.submit(ask, *args)

    def _execute(self, query: str, params: dict, *, raw: bool = False, settings: dict | None = None) -> list[tuple]:
        params = {"ids": tuple(self.ids) or (0,), **params}
        return raw_execute(query, params, settings) if raw else cluster().execute(query, params, settings=settings)

    def _bots(self) -> str:
        return "" if self.include_bots else " AND is_bot = 0"

    def _split(self, start: datetime) -> tuple["ClickHouseReport", "ClickHouseReport | None"]:
        """This report's links whose clicks from `start` on none of their
        deletions hides, and a report of the others (None: there are none),
        which reads the raw clicks, as the rollups cannot leave a click out."""
        hidden = self.hidden.after(moment_ms(start))
        if not hidden.before:
            return self, None
        plain = [link for link in self.ids if link not in hidden.before]
        masked = [link for link in self.ids if link in hidden.before]
        return replace(self, ids=plain, hidden=Hidden()), replace(self, ids=masked, hidden=hidden)

    def _kept_from(self, start: datetime) -> datetime:
        """`start`, or the second of the earliest deletion after it when a
        deletion hides each link's clicks from before some moment after it:
        the raw clicks' key range then starts there."""
        hidden = self.hidden.after(moment_ms(start))
        if not self.ids or any(link not in hidden.before for link in self.ids):
            return start
        return max(start, datetime.fromtimestamp(min(hidden.before.values()) // 1000, UTC))

    def _raw_where(self, start: datetime, end: datetime) -> tuple[str, dict]:
        where = ["link_id IN %(ids)s", "occurred_at >= %(start)s", "occurred_at < %(end)s"]
        params = {"start": naive_utc(self._kept_from(start)), "end": naive_utc(end)}
        for index, (dimension, value) in enumerate(self.filters.items()):
            where.append(f"{dimension} = %(f{index})s")
            params[f"f{index}"] = value
        where.append(self.hidden.after(moment_ms(start)).kept(params))
        return " AND ".join(where), params

    def series_and_totals(
        self, start: datetime, end: datetime, interval: str, periods: list[tuple[str, datetime, datetime]]
    ) -> tuple[list[Point], dict[str, Totals]]:
        """The series of [start, end) and each period's totals. Without
        filters, one statement over the hourly rollup that reads each visitor
        sketch of the ranges once for both (reading the sketches is most of
        a report's time, docs/benchmarks.md): a row goes to its bucket's key
        and to the mark (1, 2, ...) of each period it is in, which no
        bucket's key is (a key is a whole hour's seconds). The links some
        of whose clicks in the ranges a deletion hides are asked the same of
        their raw clicks, and the two added up (visitors are a link's, added
        over the links)."""
        if self.filters:
            return self.raw_series(start, end, interval), self.raw_totals(periods)
        ranges = [(start, end)] + [(low, high) for _, low, high in periods]
        plain, masked = self._split(min(low for low, _ in ranges))
        rows = plain._series_rows(ranges, interval, raw=False) if plain.ids else []
        if masked is not None:
            rows = _added_up(rows, masked._series_rows(ranges, interval, raw=True))
        marks = {mark: name for mark, (name, _, _) in enumerate(periods, 1)}
        to_bucket = from_key(interval, self.zone)
        series, found = [], {}
        for key, clicks, human, visitors in rows:
            counted = clicks if self.include_bots else human
            if key in marks:
                found[marks[key]] = Totals(clicks=counted, visitors=visitors, bots=clicks - human)
            elif counted:
                series.append(Point(to_bucket(key), counted, visitors))
        return series, {name: found.get(name, Totals(visitors=0)) for name, _, _ in periods}

    def _series_rows(self, ranges: list[tuple[datetime, datetime]], interval: str, *, raw: bool) -> list[tuple]:
        """(key, clicks, human clicks, visitors) of series_and_totals, from
        the hourly rollup, or from the raw clicks that no deletion hides."""
        hour = "toStartOfHour(occurred_at)" if raw else "bucket"
        keys = [_key(interval, self.zone, hour)] + [str(mark) for mark in range(1, len(ranges))]
        kept = ", ".join(f"{hour} >= %(s{i})s AND {hour} < %(e{i})s" for i in range(len(ranges)))
        first = self._kept_from(min(low for low, _ in ranges)) if raw else min(low for low, _ in ranges)
        params = {"low": naive_utc(first), "high": naive_utc(max(high for _, high in ranges))}
        for i, (low, high) in enumerate(ranges):
            params |= {f"s{i}": naive_utc(low), f"e{i}": naive_utc(high)}
        humans = "" if self.include_bots else "If"
        moment = "occurred_at" if raw else "bucket"
        links = f"link_id IN %(ids)s AND {moment} >= %(low)s AND {moment} < %(high)s"
        if raw:
            source, where = "clicks", f"WHERE {links} AND {self.hidden.kept(params)}"
            c, h = "count()", "countIf(is_bot = 0)"
            v = f"uniqCombined{humans}(visitor_hash{'' if self.include_bots else ', is_bot = 0'})"
        else:
            # PREWHERE: the sketches are read of the links' rows alone, not
            # of every row of the granules they share with other links.
            source, where = "click_rollup_hour", f"PREWHERE {links}"
            c, h = "countMerge(clicks)", "countMergeIf(clicks, is_bot = 0)"
            v = f"uniqCombinedMerge{humans}(visitors{'' if self.include_bots else ', is_bot = 0'})"
        return self._execute(
            f"""SELECT key, sum(c), sum(h), sum(least(v, {"c" if self.include_bots else "h"})) FROM (
                SELECT link_id, key, {c} AS c, {h} AS h, {v} AS v
                FROM {source}
                ARRAY JOIN arrayFilter((key, keep) -> keep = 1, [{", ".join(keys)}], [{kept}]) AS key
                {where}
                GROUP BY link_id, key
            ) GROUP BY key ORDER BY key""",
            params,
            raw=raw,
            settings=_PER_LINK_ON_EACH_SHARD,
        )

    def breakdowns(self, start: datetime, end: datetime, top: int | None) -> dict[str, list[tuple[str, int]]]:
        """Each dimension's values over [start, end) (reports ask without
        filters): the whole UTC months within it from the breakdown rollup
        (sql/clickhouse/0002_breakdowns.sql), and from the raw clicks the
        days at either end and, if there are any, the clicks of those months
        stored before the rollup was (in_breakdowns = 0: PREWHERE reads the
        other columns only of the parts of the range that hold such rows).
        The links some of whose clicks in the range a deletion hides are
        counted from their raw clicks alone."""
        plain, masked = self._split(start)
        counts = plain._breakdown_counts(start, end) if plain.ids else {}
        if masked is not None:
            where, params = masked._raw_where(start, end)
            for dimension, items in masked._counts([("clicks", where + self._bots())], params).items():
                counts[dimension] = _added(counts.get(dimension, []), items)
        return _ranked({dimension: counts.get(dimension, []) for dimension in DIMENSIONS}, top, keep_whole=("rule",))

    def _breakdown_counts(self, start: datetime, end: datetime) -> dict[str, list[tuple[str, int]]]:
        where, params = self._raw_where(start, end)
        sources, rolled = [("clicks", where + self._bots())], ""
        first, last = _whole_months(start, end)
        if first < last:
            params |= {"m0": first.date(), "m1": last.date(), "t0": naive_utc(first), "t1": naive_utc(last)}
            links = f"link_id IN %(ids)s{self._bots()}"
            ends = (
                "(occurred_at >= %(start)s AND occurred_at < %(t0)s OR occurred_at >= %(t1)s AND occurred_at < %(end)s)"
            )
            within = f"{links} AND occurred_at >= %(t0)s AND occurred_at < %(t1)s"
            sources = [("clicks", f"{links} AND {ends}")]
            if self._execute(f"SELECT count() FROM clicks PREWHERE in_breakdowns = 0 WHERE {within}", params)[0][0]:
                sources.append(("clicks PREWHERE in_breakdowns = 0", within))
            rolled = (
                "SELECT dimension, value, toUInt64(sum(clicks)) AS n FROM click_breakdown_month"
                f" WHERE {links} AND month >= %(m0)s AND month < %(m1)s GROUP BY dimension, value"
            )
        return self._counts(sources, params, rolled=rolled)

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
        counts = self._counts([(f"({sample})", "1")], {**params, "sample": settings.REPORT_FILTER_SAMPLE}, raw=True)
        sampled = sum(n for _, n in counts[DIMENSIONS[0]])
        return _ranked(counts, top), sampled

    def _counts(
        self, sources: list[tuple[str, str]], params: dict, *, raw: bool = False, rolled: str = ""
    ) -> dict[str, list[tuple[str, int]]]:
        """Each dimension's values and their clicks among the rows each
        source (a table or subquery, and a condition on its rows) keeps (a
        click no rule served has no `rule`): a statement a dimension and
        source, each reading that column alone (a subquery's `SELECT *` cost
        a year's stats page 300 ms more on 18.16, docs/benchmarks.md); and
        added to them, those of the statement `rolled`, if any."""
        parts = " UNION ALL ".join(
            f"SELECT '{dimension}' AS dimension, toString({dimension}) AS value, count() AS n FROM {source}"
            f" WHERE {where} AND {dimension} IS NOT NULL GROUP BY {dimension}"
            for source, where in sources
            for dimension in DIMENSIONS
        )
        if rolled or len(sources) > 1:
            parts = f"SELECT dimension, value, sum(n) FROM ({' UNION ALL '.join(filter(None, [rolled, parts]))})"
            parts += " GROUP BY dimension, value"
        counts: dict[str, list[tuple[str, int]]] = {dimension: [] for dimension in DIMENSIONS}
        for dimension, value, n in self._execute(parts, params, raw=raw):
            counts[dimension].append((value, n))
        return counts


def raw_execute(query: str, params: dict, more: dict | None = None) -> list[tuple]:
    """A statement over the raw clicks (with `more` settings), stopped at
    REPORT_RAW_TIMEOUT_MS (max_execution_time) as a report too large, as
    PostgreSQL's are."""
    from clickhouse_driver.errors import ServerException

    options = {"max_execution_time": max(1, settings.REPORT_RAW_TIMEOUT_MS // 1000), **(more or {})}
    try:
        return cluster().execute(query, params, settings=options)
    except ServerException as error:
        if error.code == _TIMEOUT_EXCEEDED:
            raise ReportTooLarge(RawReport.MESSAGE, code="too_large") from error
        raise


def _whole_months(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """The start of the first whole UTC month within [start, end) and the
    end of the last (first >= last: none), within the years the cluster's
    times can be (1970 to 2105)."""
    start = max(start.astimezone(UTC), _EARLIEST)
    end = min(end.astimezone(UTC), _LATEST)
    first = start.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if first < start:
        first = (first + timedelta(days=32)).replace(day=1)
    return first, end.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _added_up(these: list[tuple], those: list[tuple]) -> list[tuple]:
    """Rows of (key, figures...) of two statements, each key's figures added, by key."""
    if not these or not those:
        return these or those
    added: dict = {}
    for key, *figures in these + those:
        before = added.get(key)
        added[key] = figures if before is None else [a + b for a, b in zip(before, figures, strict=True)]
    return [(key, *figures) for key, figures in sorted(added.items())]


def _added(these: list[tuple[str, int]], those: list[tuple[str, int]]) -> list[tuple[str, int]]:
    together = dict(these)
    for value, n in those:
        together[value] = together.get(value, 0) + n
    return list(together.items())


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

"""Reads of click statistics (docs/rollups.md).

A report is a series by hour, day, week or month in a time zone, the totals
of its range (and of the period of the same length before it), and
breakdowns by dimension. Without filters every figure comes from the
rollups. Filtered by one value of one dimension, the series and totals come
from that value's breakdown rollups; everything else under filters comes
from the raw clicks, within REPORT_RAW_TIMEOUT_MS (ReportTooLarge beyond
it), and the breakdowns under filters from the latest REPORT_FILTER_SAMPLE
matching clicks.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from functools import cache
from typing import Literal, NamedTuple
from zoneinfo import ZoneInfo, available_timezones

import psycopg
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import OperationalError, connections, transaction

from links.validation import default_host, domain_host
from slingshot.db import reports_db
from slingshot.text import refusal, unstorable

from .rollups import DIMENSIONS, NOT_FOLDED

Interval = Literal["hour", "day", "week", "month"]
# The shortest length of each interval, to count a range's points.
INTERVALS = {
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
    "week": timedelta(weeks=1),
    "month": timedelta(days=28),
}
STATS_DEFAULT_SPAN = {
    "hour": timedelta(hours=48),
    "day": timedelta(days=30),
    "week": timedelta(weeks=26),
    "month": timedelta(days=730),
}
STATS_MAX_POINTS = 2000
# PostgreSQL keeps time zone offsets within ±15:59; Python accepts up to ±23:59.
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)
UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1)
_HOUR = timedelta(hours=1)


def _reports():
    """The connection reports read with: the database replica when there is
    one (slingshot/db.py), so that heavy reports never slow the import."""
    return connections[reports_db()]


class Point(NamedTuple):
    bucket: datetime  # start of the hour, day, week or month, in the report's zone
    clicks: int
    visitors: int | None  # distinct visitors in the bucket; None under filters (docs/rollups.md)


@dataclass(frozen=True)
class Totals:
    clicks: int = 0  # as the report counts them: without bots unless include_bots
    visitors: int | None = 0  # distinct over the whole range; None under filters
    bots: int = 0  # clicks by bots in the range, counted or not


@dataclass(frozen=True)
class LinkStats:
    series: list[Point]  # buckets with clicks only, oldest first
    totals: Totals
    breakdowns: dict[str, list[tuple[str, int]]]  # dimension -> [(value, clicks)], most clicks first
    previous: Totals | None = None  # the period of the same length just before, when asked for
    # Under filters, the breakdowns count this many clicks: the latest that
    # match, at most REPORT_FILTER_SAMPLE. None: every click, from the rollups.
    sample: int | None = None

    @property
    def clicks(self) -> int:
        return self.totals.clicks


@dataclass(frozen=True)
class LinkTotals:
    clicks: int = 0
    human_clicks: int = 0


class ReportTooLarge(ValidationError):
    """A report from the raw clicks that would take longer than REPORT_RAW_TIMEOUT_MS."""


# --- time zones and buckets --------------------------------------------------------


@cache
def time_zones() -> frozenset[str]:
    """The zone names a report may be asked for (IANA, as Python and PostgreSQL know them)."""
    return frozenset(available_timezones() - {"localtime", "Factory"})


def zone_named(name: str) -> tzinfo:
    """The zone of an IANA name; ValueError for one that is not in time_zones()."""
    if name in ("UTC", "Etc/UTC"):
        return UTC
    if name not in time_zones():
        raise ValueError(f"unknown time zone {name!r}")
    return ZoneInfo(name)


def zone_name(zone: tzinfo) -> str:
    if zone is UTC:
        return "UTC"
    if isinstance(zone, ZoneInfo) and zone.key in time_zones():
        return zone.key
    raise ValueError(f"a report's zone is UTC or a ZoneInfo of time_zones(), not {zone!r}")


def _is_utc(zone: tzinfo) -> bool:
    return zone is UTC or zone_name(zone) in ("UTC", "Etc/UTC")


def _local_midnight(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=zone)


def bucket_start(moment: datetime, interval: str, zone: tzinfo = UTC) -> datetime:
    """The start of the bucket that `moment` falls in, in `zone`: its UTC
    hour (shown in the zone), or the local day, the week from Monday, or the month."""
    if interval == "hour":
        return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0).astimezone(zone)
    day = moment.astimezone(zone).date()
    if interval == "week":
        day -= timedelta(days=day.weekday())
    elif interval == "month":
        day = day.replace(day=1)
    return _local_midnight(day, zone)


def next_bucket(bucket: datetime, interval: str, zone: tzinfo = UTC) -> datetime:
    """The start of the bucket after the one starting at `bucket` (a bucket_start)."""
    if interval == "hour":
        return (bucket.astimezone(UTC) + _HOUR).astimezone(zone)
    day = bucket.astimezone(zone).date()
    if interval == "month":
        day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    else:
        day += INTERVALS[interval]
    return _local_midnight(day, zone)


def bucket_end(moment: datetime, interval: str, zone: tzinfo = UTC) -> datetime:
    """`moment` rounded up to the start of a bucket."""
    floor = bucket_start(moment, interval, zone)
    return floor if floor == moment else next_bucket(floor, interval, zone)


def _hour_ceil(moment: datetime) -> datetime:
    """The first whole UTC hour at or after `moment`: the rollups' grain. A
    local day in a zone whose offset is not whole hours holds the hours that
    start in it (docs/rollups.md)."""
    floor = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return floor if floor == moment else floor + _HOUR


def storable_offset(moment: datetime) -> bool:
    """Whether PostgreSQL takes this time's UTC offset (naive times have none)."""
    offset = moment.utcoffset()
    return offset is None or abs(offset) <= MAX_UTC_OFFSET


@dataclass(frozen=True)
class StatsRange:
    start: datetime
    end: datetime
    interval: Interval
    include_bots: bool
    zone: tzinfo = UTC
    filters: Mapping[str, str] = field(default_factory=dict)  # {dimension: value}


def stats_range(
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    interval: str = "day",
    include_bots: bool = False,
    zone: tzinfo = UTC,
    filters: Mapping[str, str] | None = None,
) -> StatsRange:
    """The range of a stats request (link_stats' arguments), with defaults:
    up to now, from STATS_DEFAULT_SPAN before the end. Raises ValidationError
    with a message per parameter, named as the API and the link page name
    them (`from`, `to`, `interval`, a filter's dimension), for a range that
    is empty, that has more than STATS_MAX_POINTS buckets, or that
    PostgreSQL or Python cannot hold once rounded to whole buckets, and for
    a filter text cannot hold."""
    if interval not in INTERVALS:
        raise ValidationError({"interval": f"Use one of {', '.join(INTERVALS)}."})
    out_of_range = "Out of range: buckets must fall between 0001-01-01 and 9999-12-31 (UTC)."
    for name, moment in (("from", start), ("to", end)):
        if moment is not None and not storable_offset(moment):
            raise ValidationError({name: "The UTC offset must be within ±15:59."})
    end = end or datetime.now(UTC)
    try:
        _hour_ceil(bucket_end(end, interval, zone))
        start = start or end - STATS_DEFAULT_SPAN[interval]
    except (OverflowError, ValueError):
        raise ValidationError({"to": out_of_range}) from None
    try:
        bucket_start(start, interval, zone).astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValidationError({"from": out_of_range}) from None
    if start >= end:
        raise ValidationError({"to": "Must be after 'from'."})
    if (end - start) / INTERVALS[interval] > STATS_MAX_POINTS:
        raise ValidationError(
            {"interval": f"At most {STATS_MAX_POINTS} points: use a shorter range or a longer interval."}
        )
    return StatsRange(
        start=start,
        end=end,
        interval=interval,
        include_bots=include_bots,
        zone=zone,
        filters=checked_filters(filters),
    )


# --- which rollup rows a range reads ----------------------------------------------

# (grain, from the first hour not folded yet, lo, hi): rows of the hour or day
# tables with buckets in [lo, hi).
Span = tuple[str, bool, datetime, datetime]


def _spans(start: datetime, end: datetime) -> list[Span]:
    """The rollup rows that hold [start, end) (whole UTC hours), each click
    once: hours at either end, whole UTC days from the day tables, and the
    hours of those days not folded into them yet."""
    whole_from = bucket_end(start, "day")
    whole_to = bucket_start(end, "day")
    if whole_from >= whole_to:
        spans = [("hour", False, start, end)]
    else:
        spans = [
            ("hour", False, start, whole_from),
            ("day", False, whole_from, whole_to),
            ("hour", True, whole_from, whole_to),
            ("hour", False, whole_to, end),
        ]
    return [span for span in spans if span[2] < span[3]]


def _span_sql(table: str, span: Span, ids: list[int], where: str = "", where_params: tuple = ()) -> tuple[str, list]:
    """FROM and WHERE of a span's rows of click_rollup_* or click_breakdown_* (`table` without the grain)."""
    grain, unfolded, lo, hi = span
    floor = NOT_FOLDED if unfolded else "%s"
    return (
        f"FROM {table}_{grain} WHERE link_id = ANY(%s) AND bucket >= {floor} AND bucket < %s{where}",
        [ids, lo, hi, *where_params],
    )


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
    return lambda seconds: (_EPOCH + timedelta(seconds=seconds)).replace(tzinfo=zone)


# --- the report ---------------------------------------------------------------------


def checked_filters(filters: Mapping[str, str] | None) -> dict[str, str]:
    """Filters as the queries take them; raises ValidationError naming a
    dimension whose value text cannot hold (a NUL from a page's query string)."""
    filters = dict(filters or {})
    unknown = set(filters) - set(DIMENSIONS)
    if unknown:
        raise ValueError(f"cannot filter by {', '.join(sorted(unknown))}: use {', '.join(DIMENSIONS)}")
    for dimension, value in filters.items():
        if char := unstorable(value):
            raise ValidationError({dimension: refusal(char)})
    return filters


def link_stats(
    *,
    link_ids: Iterable[int],
    start: datetime,
    end: datetime,
    interval: Interval = "day",
    include_bots: bool = False,
    top: int | None = 50,
    zone: tzinfo = UTC,
    filters: Mapping[str, str] | None = None,
    compare: bool = False,
    now: datetime | None = None,
) -> LinkStats:
    """The report of the links' clicks in [start, end), summed over the links.

    Buckets are whole hours (UTC hours, shown in `zone`) or days, weeks from
    Monday and months of `zone`: start is rounded down and end up to the
    interval. Bots are left out unless include_bots. Breakdowns keep the
    `top` values of each dimension (None: all; 0: none are read). `filters`
    ({dimension: value}) keeps only the clicks with those values. `compare`
    adds the totals of the period as long as [start, min(end, now)) just
    before it.

    Without filters, three queries of the rollups, each reading at most a row
    per link and bucket (and per value for breakdowns): whole UTC days from
    the day tables where the zone and interval allow, hours otherwise.
    Raises ReportTooLarge when a query of the raw clicks would take longer
    than REPORT_RAW_TIMEOUT_MS."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {sorted(INTERVALS)}, not {interval!r}")
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("start and end must be timezone-aware")
    filters = checked_filters(filters)
    zone_name(zone)  # a zone PostgreSQL knows
    ids = list(link_ids)
    start = _hour_ceil(bucket_start(start, interval, zone))
    end = _hour_ceil(bucket_end(end, interval, zone))
    periods = [("current", start, end)]
    if compare:
        now_hour = _hour_ceil(now or datetime.now(UTC))
        length = max(min(end, now_hour), start + _HOUR) - start
        try:
            periods.append(("previous", start - length, start))
        except OverflowError:  # a range that starts near the year 1
            periods.append(("previous", datetime.min.replace(tzinfo=UTC), start))

    report = _Report(ids=ids, include_bots=include_bots, zone=zone, filters=filters)
    if len(filters) > 1:
        with report.raw():
            series = report.raw_series(start, end, interval)
            totals = report.raw_totals(periods)
    else:
        series = report.series(start, end, interval)
        totals = report.totals(periods)
    if top == 0:
        breakdowns, sample = {dimension: [] for dimension in DIMENSIONS}, None
    elif filters:
        with report.raw():
            breakdowns, sample = report.raw_breakdowns(start, end, top)
    else:
        breakdowns, sample = report.breakdowns(start, end, top), None
    return LinkStats(
        series=series,
        totals=totals["current"],
        previous=totals.get("previous") if compare else None,
        breakdowns=breakdowns,
        sample=sample,
    )


def range_stats(span: StatsRange, *, link_ids: Iterable[int], **options) -> LinkStats:
    """link_stats over a range as stats_range checked it, with the period
    before for comparison; `options` as link_stats takes them (top, now)."""
    return link_stats(
        link_ids=link_ids,
        start=span.start,
        end=span.end,
        interval=span.interval,
        include_bots=span.include_bots,
        zone=span.zone,
        filters=span.filters,
        compare=True,
        **options,
    )


@dataclass
class _Report:
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
        if interval == "hour":
            # One rollup row per link and hour: its visitors need no union.
            sql, params = _span_sql(table, ("hour", False, start, end), self.ids, where, where_params)
            columns = "NULL::bigint" if filtered else f"sum({visitors})::bigint"
            query = (
                f"SELECT extract(epoch FROM bucket)::bigint, sum({counted})::bigint, {columns} {sql} "
                f"GROUP BY bucket HAVING sum({counted}) > 0 ORDER BY bucket"
            )
        else:
            # Whole UTC days from the day tables when the zone's days are
            # UTC days; hours otherwise. A link's rows of one bucket add up,
            # and their visitors are the union of the sketches.
            spans = _spans(start, end) if _is_utc(self.zone) else [("hour", False, start, end)]
            key = _bucket_key(interval, self.zone)
            parts, params = [], []
            for span in spans:
                sql, span_params = _span_sql(table, span, self.ids, where, where_params)
                extra = "" if filtered else f", {visitors}, {sketch}"
                parts.append(f"SELECT link_id, {key} AS k, {counted} AS clicks{extra} {sql}")
                params += span_params
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
        with _reports().cursor() as cursor:
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
        with _reports().cursor() as cursor:
            cursor.execute(query, params)
            found = {row[0]: row[1:] for row in cursor.fetchall()}
        totals = {}
        for name, _, _ in periods:
            clicks, human, visitors = found.get(name, (0, 0, None if self.filters else 0))
            totals[name] = Totals(clicks=clicks if self.include_bots else human, visitors=visitors, bots=clicks - human)
        return totals

    def breakdowns(self, start: datetime, end: datetime, top: int | None) -> dict[str, list[tuple[str, int]]]:
        parts, params = [], []
        for span in _spans(start, end):
            sql, span_params = _span_sql("click_breakdown", span, self.ids)
            parts.append(f"SELECT dimension, value, {self.counted} AS clicks {sql}")
            params += span_params
        breakdowns: dict[str, list[tuple[str, int]]] = {dimension: [] for dimension in DIMENSIONS}
        if not parts:
            return breakdowns
        with _reports().cursor() as cursor:
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
        return _RawReport()

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
        with _reports().cursor() as cursor:
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
        with _reports().cursor() as cursor:
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
        with _reports().cursor() as cursor:
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


class _RawReport:
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


def link_totals(*, link_ids: Iterable[int]) -> dict[int, LinkTotals]:
    """All-time clicks and human clicks of each link (links without clicks get zeros); one query."""
    ids = list(link_ids)
    totals = {link_id: LinkTotals() for link_id in ids}
    with _reports().cursor() as cursor:
        cursor.execute(
            "SELECT link_id, clicks, human_clicks FROM link_click_totals WHERE link_id = ANY(%s)",
            [ids],
        )
        for link_id, clicks, human in cursor.fetchall():
            totals[link_id] = LinkTotals(clicks=int(clicks), human_clicks=int(human))
    return totals


# --- orphan visits ------------------------------------------------------------------


# What each kind of orphan visit means to a person (contract.ORPHAN_KINDS).
ORPHAN_KIND_LABELS = {
    "unknown": "unknown",
    "disabled": "disabled",
    "scheduled": "scheduled",
    "expired": "expired",
    "limit": "past its visit limit",
    "password": "password page",
}


@dataclass(frozen=True)
class OrphanVisits:
    """Visits to paths that are no link, in a range: counts by path, as
    (domain, path, kind, visits, bots) with the domain's host ('' the default
    domain), the slug asked for, and what the edge found (slingshot.contract's
    ORPHAN_KINDS); and by referrer host ('' for none), as (host,
    visits, bots)."""

    visits: int
    bots: int
    by_path: list[tuple[str, str, str, int, int]]
    by_referrer: list[tuple[str, int, int]]


def orphan_domain(host: str) -> str:
    """How orphan_visits names the domain of `host` as people write it (any
    case, IDN or punycode): '' for the default domain's. Raises
    ValidationError for what cannot be a domain's host."""
    host = domain_host(host.strip())
    return "" if host == default_host() else host


_REFERER_HOST = r"lower(coalesce(substring(referer from '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#:@]+)'), ''))"


def orphan_visits(
    *,
    start: datetime,
    end: datetime,
    include_bots: bool = True,
    domain: str | None = None,
    kind: str | None = None,
    top: int = 50,
) -> OrphanVisits:
    """From the raw orphan_visits (partitioned by month, so a range reads
    only its months), under REPORT_RAW_TIMEOUT_MS like any raw report;
    raises ReportTooLarge past it. `domain`: only the visits on the domain
    of this host ('' the default domain); `kind`: only those of this kind."""
    where = "occurred_at >= %(start)s AND occurred_at < %(end)s" + ("" if include_bots else " AND NOT is_bot")
    if domain is not None:
        where += " AND domain = %(domain)s"
    if kind is not None:
        where += " AND kind = %(kind)s"
    params = {"start": start, "end": end, "top": top, "domain": domain, "kind": kind}
    grouped = (
        "SELECT {key}, count(*), count(*) FILTER (WHERE is_bot) FROM orphan_visits WHERE "
        + where
        + " GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT %(top)s"
    )
    with _RawReport(), _reports().cursor() as cursor:
        cursor.execute(f"SELECT count(*), count(*) FILTER (WHERE is_bot) FROM orphan_visits WHERE {where}", params)
        visits, bots = cursor.fetchone()
        cursor.execute(
            "SELECT domain, slug, kind, count(*), count(*) FILTER (WHERE is_bot) FROM orphan_visits WHERE "
            + where
            + " GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2, 3 LIMIT %(top)s",
            params,
        )
        by_path = [(host, path, kind, int(n), int(b)) for host, path, kind, n, b in cursor.fetchall()]
        cursor.execute(grouped.format(key=_REFERER_HOST), params)
        by_referrer = [(value, int(n), int(b)) for value, n, b in cursor.fetchall()]
    return OrphanVisits(visits=int(visits), bots=int(bots), by_path=by_path, by_referrer=by_referrer)

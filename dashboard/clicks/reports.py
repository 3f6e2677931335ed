"""Reads of click statistics (docs/rollups.md).

A report is a series by hour, day, week or month in a time zone, the totals
of its range (and of the period of the same length before it), and
breakdowns by dimension. Without filters every figure comes from the
rollups. Filtered by one value of one dimension, the series and totals come
from that value's breakdown rollups; everything else under filters comes
from the raw clicks, within REPORT_RAW_TIMEOUT_MS (ReportTooLarge beyond
it), and the breakdowns under filters from the latest REPORT_FILTER_SAMPLE
matching clicks. The calendar is clicks/calendar.py, the statements
clicks/report_queries.py, or with CLICK_STORE=clickhouse
clicks/clickhouse_reports.py.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo

from .calendar import (
    HOUR,
    INTERVALS,
    UTC,
    Interval,
    StatsRange,
    bucket_end,
    bucket_start,
    checked_filters,
    hour_ceil,
    zone_name,
)
from .clickhouse_clicks import using_clickhouse
from .clickhouse_reports import ClickHouseReport
from .report_queries import Point, Report, Totals, reports_connection
from .rollups import DIMENSIONS


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
    start = hour_ceil(bucket_start(start, interval, zone))
    end = hour_ceil(bucket_end(end, interval, zone))
    periods = [("current", start, end)]
    if compare:
        now_hour = hour_ceil(now or datetime.now(UTC))
        length = max(min(end, now_hour), start + HOUR) - start
        try:
            periods.append(("previous", start - length, start))
        except OverflowError:  # a range that starts near the year 1
            periods.append(("previous", datetime.min.replace(tzinfo=UTC), start))

    kind = ClickHouseReport if using_clickhouse() else Report
    report = kind(ids=ids, include_bots=include_bots, zone=zone, filters=filters)
    # Without filters the breakdowns are asked alongside the series (at once
    # on ClickHouse, whose nodes work on both; in turn on PostgreSQL).
    alongside = report.alongside(report.breakdowns, start, end, top) if top != 0 and not filters else None
    if len(filters) > 1:
        with report.raw():
            series = report.raw_series(start, end, interval)
            totals = report.raw_totals(periods)
    else:
        series, totals = report.series_and_totals(start, end, interval, periods)
    if top == 0:
        breakdowns, sample = {dimension: [] for dimension in DIMENSIONS}, None
    elif filters:
        with report.raw():
            breakdowns, sample = report.raw_breakdowns(start, end, top)
    else:
        breakdowns, sample = alongside.result(), None
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


def link_totals(*, link_ids: Iterable[int]) -> dict[int, LinkTotals]:
    """All-time clicks and human clicks of each link (links without clicks
    get zeros); one query. PostgreSQL's link_click_totals, which the
    importer keeps with either click store."""
    ids = list(link_ids)
    totals = {link_id: LinkTotals() for link_id in ids}
    with reports_connection().cursor() as cursor:
        cursor.execute(
            "SELECT link_id, clicks, human_clicks FROM link_click_totals WHERE link_id = ANY(%s)",
            [ids],
        )
        for link_id, clicks, human in cursor.fetchall():
            totals[link_id] = LinkTotals(clicks=int(clicks), human_clicks=int(human))
    return totals

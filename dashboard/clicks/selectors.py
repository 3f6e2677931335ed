"""Reads of click statistics, from the rollups only (docs/rollups.md)."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal

from django.core.exceptions import ValidationError
from django.db import connection

from .rollups import DAY_OF_BUCKET, DIMENSIONS, NOT_FOLDED

INTERVALS = {"hour": timedelta(hours=1), "day": timedelta(days=1)}
STATS_DEFAULT_SPAN = {"hour": timedelta(hours=48), "day": timedelta(days=30)}
STATS_MAX_POINTS = 2000
# PostgreSQL keeps time zone offsets within ±15:59; Python accepts up to ±23:59.
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)


@dataclass(frozen=True)
class Point:
    bucket: datetime  # start of the UTC hour or day
    clicks: int
    visitors: int  # distinct visitors in this hour or day


@dataclass(frozen=True)
class LinkStats:
    series: list[Point]
    clicks: int
    breakdowns: dict[str, list[tuple[str, int]]]  # dimension -> [(value, clicks)], most clicks first


@dataclass(frozen=True)
class LinkTotals:
    clicks: int = 0
    human_clicks: int = 0


def bucket_start(moment: datetime, interval: str) -> datetime:
    """The start of the UTC hour or day that `moment` falls in."""
    moment = moment.astimezone(timezone.utc)
    moment = moment.replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if interval == "day" else moment


def _ceil(moment: datetime, interval: str) -> datetime:
    floor = bucket_start(moment, interval)
    return floor if floor == moment else floor + INTERVALS[interval]


def storable_offset(moment: datetime) -> bool:
    """Whether PostgreSQL takes this time's UTC offset (naive times have none)."""
    offset = moment.utcoffset()
    return offset is None or abs(offset) <= MAX_UTC_OFFSET


@dataclass(frozen=True)
class StatsRange:
    start: datetime
    end: datetime
    interval: Literal["hour", "day"]
    include_bots: bool


def stats_range(
    *, start: datetime | None = None, end: datetime | None = None, interval: str = "day", include_bots: bool = False
) -> StatsRange:
    """The range of a stats request (link_stats' arguments), with defaults:
    up to now, from STATS_DEFAULT_SPAN before the end. Raises ValidationError
    with a message per parameter, named as the API and the link page name
    them (`from`, `to`, `interval`), for a range that is empty, that has more
    than STATS_MAX_POINTS buckets, or that PostgreSQL or Python cannot hold
    once rounded to whole buckets."""
    if interval not in INTERVALS:
        raise ValidationError({"interval": f"Use one of {', '.join(INTERVALS)}."})
    out_of_range = "Out of range: buckets must fall between 0001-01-01 and 9999-12-31 (UTC)."
    for name, moment in (("from", start), ("to", end)):
        if moment is not None and not storable_offset(moment):
            raise ValidationError({name: "The UTC offset must be within ±15:59."})
    end = end or datetime.now(timezone.utc)
    try:
        _ceil(end, interval)
        start = start or end - STATS_DEFAULT_SPAN[interval]
    except OverflowError:
        raise ValidationError({"to": out_of_range}) from None
    try:
        bucket_start(start, interval)
    except OverflowError:
        raise ValidationError({"from": out_of_range}) from None
    if start >= end:
        raise ValidationError({"to": "Must be after 'from'."})
    if (end - start) / INTERVALS[interval] > STATS_MAX_POINTS:
        raise ValidationError({"interval": f"At most {STATS_MAX_POINTS} points: use a shorter range or interval=day."})
    return StatsRange(start=start, end=end, interval=interval, include_bots=include_bots)


def link_stats(
    *,
    link_ids: Iterable[int],
    start: datetime,
    end: datetime,
    interval: Literal["hour", "day"] = "day",
    include_bots: bool = False,
    top: int | None = 50,
) -> LinkStats:
    """Time series and breakdowns of the links' clicks in [start, end), summed
    over the links. Buckets are whole UTC hours or days: start is rounded
    down and end up to the interval. Bots are left out unless include_bots.
    Breakdowns keep the `top` values of each dimension (None: all), but
    `rule`, whose values are few (a link has at most 30 rules and
    destinations), is kept whole.

    Two queries, each reading at most one rollup row per bucket (and per value
    for breakdowns), which are taken from the day table for whole days and
    from the hour table only for the partial days at either end, and for the
    hours not folded into the day tables yet (docs/rollups.md: the last hour
    or so)."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {sorted(INTERVALS)}, not {interval!r}")
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("start and end must be timezone-aware")
    ids = list(link_ids)
    start, end = bucket_start(start, interval), _ceil(end, interval)
    clicks, visitors = ("clicks", "visitors") if include_bots else ("human_clicks", "human_visitors")
    sketch = "visitor_sketch" if include_bots else "human_visitor_sketch"
    with connection.cursor() as cursor:
        if interval == "hour":
            cursor.execute(
                f"SELECT bucket, sum({clicks}), sum({visitors}) FROM click_rollup_hour "
                "WHERE link_id = ANY(%s) AND bucket >= %s AND bucket < %s GROUP BY bucket ORDER BY bucket",
                [ids, start, end],
            )
        else:
            # A day's row, and its hours not folded yet: their clicks add up,
            # their visitors are the union of the sketches.
            cursor.execute(
                f"WITH parts AS ("
                f" SELECT link_id, bucket, {clicks} AS clicks, {visitors} AS visitors, {sketch} AS sketch"
                f" FROM click_rollup_day WHERE link_id = ANY(%s) AND bucket >= %s AND bucket < %s"
                f" UNION ALL"
                f" SELECT link_id, {DAY_OF_BUCKET}, {clicks}, {visitors}, {sketch}"
                f" FROM click_rollup_hour WHERE link_id = ANY(%s) AND bucket >= {NOT_FOLDED} AND bucket < %s"
                f"), per_link AS ("
                f" SELECT bucket, sum(clicks) AS clicks, CASE WHEN count(*) = 1 THEN max(visitors) ELSE greatest("
                f"  max(visitors), least(sum(clicks), round(coalesce(hll_cardinality(hll_union_agg(sketch)), 0))))"
                f"  END AS visitors"
                f" FROM parts GROUP BY link_id, bucket"
                f") SELECT bucket, sum(clicks), sum(visitors) FROM per_link GROUP BY bucket ORDER BY bucket",
                [ids, start, end, ids, start, end],
            )
        series = [Point(bucket=bucket, clicks=int(n), visitors=int(v)) for bucket, n, v in cursor.fetchall()]

        whole_days_from, whole_days_to = _ceil(start, "day"), bucket_start(end, "day")
        if whole_days_from >= whole_days_to:
            parts = [("click_breakdown_hour", "", start, end)]
        else:
            parts = [
                ("click_breakdown_hour", "", start, whole_days_from),
                ("click_breakdown_day", "", whole_days_from, whole_days_to),
                ("click_breakdown_hour", NOT_FOLDED, whole_days_from, whole_days_to),
                ("click_breakdown_hour", "", whole_days_to, end),
            ]
        union = " UNION ALL ".join(
            f"SELECT dimension, value, {clicks} AS clicks FROM {tables} "
            f"WHERE link_id = ANY(%s) AND bucket >= {floor or '%s'} AND bucket < %s"
            for tables, floor, _, _ in parts
        )
        cursor.execute(
            f"SELECT dimension, value, total FROM ("
            f" SELECT dimension, value, sum(clicks) AS total,"
            f"  row_number() OVER (PARTITION BY dimension ORDER BY sum(clicks) DESC, value) AS rank"
            f" FROM ({union}) parts GROUP BY dimension, value HAVING sum(clicks) > 0"
            f") ranked WHERE %s::bigint IS NULL OR rank <= %s OR dimension = 'rule'"
            f" ORDER BY dimension, total DESC, value",
            [arg for _, _, lo, hi in parts for arg in (ids, lo, hi)] + [top, top],
        )
        breakdowns: dict[str, list[tuple[str, int]]] = {dimension: [] for dimension in DIMENSIONS}
        for dimension, value, total in cursor.fetchall():
            breakdowns[dimension].append((value, int(total)))
    return LinkStats(series=series, clicks=sum(point.clicks for point in series), breakdowns=breakdowns)


def link_totals(*, link_ids: Iterable[int]) -> dict[int, LinkTotals]:
    """All-time clicks and human clicks of each link (links without clicks get zeros); one query."""
    ids = list(link_ids)
    totals = {link_id: LinkTotals() for link_id in ids}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT link_id, clicks, human_clicks FROM link_click_totals WHERE link_id = ANY(%s)",
            [ids],
        )
        for link_id, clicks, human in cursor.fetchall():
            totals[link_id] = LinkTotals(clicks=int(clicks), human_clicks=int(human))
    return totals

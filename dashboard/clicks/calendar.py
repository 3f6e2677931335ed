"""The calendar of reports: time zones, the buckets of a series (hours,
and days, weeks from Monday and months of a zone), and the range of a
report as people ask for it, checked (stats_range)."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from functools import cache
from typing import Literal
from zoneinfo import ZoneInfo, available_timezones

from django.core.exceptions import ValidationError

from links.validation import storable_offset
from slingshot.text import refusal, unstorable

from .rollups import DIMENSIONS

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
UTC = timezone.utc
EPOCH = datetime(1970, 1, 1)
HOUR = timedelta(hours=1)


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


def is_utc(zone: tzinfo) -> bool:
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
        return (bucket.astimezone(UTC) + HOUR).astimezone(zone)
    day = bucket.astimezone(zone).date()
    if interval == "month":
        day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    else:
        day += INTERVALS[interval]
    return _local_midnight(day, zone)


def bucket_end(moment: datetime, interval: str, zone: tzinfo = UTC) -> datetime:
    """`moment` rounded up to the start of a bucket."""
    floor = bucket_start(moment, interval, zone)
    # As instants: an aware datetime at a local time that a change of clocks
    # skips or repeats never equals one of another zone (PEP 495).
    return floor if floor.timestamp() == moment.timestamp() else next_bucket(floor, interval, zone)


def hour_ceil(moment: datetime) -> datetime:
    """The first whole UTC hour at or after `moment`: the rollups' grain. A
    local day in a zone whose offset is not whole hours holds the hours that
    start in it (docs/rollups.md)."""
    utc = moment.astimezone(UTC)  # a local midnight the clocks skip or repeat compares in UTC alone
    floor = utc.replace(minute=0, second=0, microsecond=0)
    return floor if floor == utc else floor + HOUR


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
        hour_ceil(bucket_end(end, interval, zone))
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

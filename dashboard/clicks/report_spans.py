"""Which rollup rows hold a report's range, and the SQL of the buckets
they count in: whole UTC days from the day tables (and whole months, for
the breakdowns), hours at either end and those not folded yet, and in a
zone whose days are not UTC days, the rows of six hours and the hours a
local midnight moves (docs/rollups.md). SQL text and its parameters only:
report_queries.py runs it."""

from collections.abc import Iterator
from datetime import datetime, timedelta, tzinfo

from .calendar import EPOCH, HOUR, bucket_end, bucket_start, hour_ceil, is_utc, next_bucket, zone_name
from .rollups import DAY_OF, NOT_FOLDED, NOT_IN_MONTHS, SIX_HOURS_OF

SIX_HOURS = timedelta(hours=6)
MIDDAY = timedelta(hours=12)
DAY = timedelta(days=1)

# (grain, from the first hour not folded yet or, of days, the first day not
# in the month breakdowns yet, lo, hi): rows of the hour, day or month tables
# with buckets in [lo, hi).
Span = tuple[str, bool, datetime, datetime]


def spans(start: datetime, end: datetime, *, months: bool = False) -> list[Span]:
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


def span_sql(table: str, span: Span, ids: list[int], where: str = "", where_params: tuple = ()) -> tuple[str, list]:
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


def local_parts(
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
    select = f"SELECT link_id, {bucket_key(interval, zone)} AS k, {columns}"
    within = [start, end - SIX_HOURS, _split_blocks(interval, zone, start, end)]
    return [
        f"{select} FROM click_rollup_6h s WHERE link_id = ANY(%s) AND {whole}",
        f"{select} FROM click_rollup_hour h WHERE link_id = ANY(%s) AND bucket >= %s AND bucket < %s"
        " AND NOT EXISTS (SELECT FROM click_rollup_6h s WHERE s.link_id = h.link_id"
        f" AND s.bucket = {SIX_HOURS_OF.format(bucket='h.bucket')} AND {whole})",
    ], [ids, *within, ids, start, end, *within]


# A UTC day's row of a breakdown goes to the bucket of its midday (see moved_hours).
MIDDAY_OF_DAY = "(bucket + interval '12 hours')"
MIDDAY_OF_HOUR = f"({DAY_OF.format(bucket='bucket')} + interval '12 hours')"


def moved_hours(interval: str, zone: tzinfo, start: datetime, end: datetime) -> list[datetime]:
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


def day_parts(
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
    months, read from whole UTC days where they can (spans). In a zone
    whose days are UTC days, each row counts in the bucket it begins in. In
    another, a UTC day's row counts in the bucket of its midday, and its
    hours in another bucket (moved_hours, an index lookup each) are taken
    out of it and counted in theirs; this reads the clicks alone, with no
    `extra`, and is for the breakdowns, which have no rows of six hours (a
    series without a filter reads those, local_parts). Each click is
    counted once."""
    where, where_params = filtered
    utc = is_utc(zone)
    parts, params = [], []
    for span in spans(start, end):
        sql, span_params = span_sql(table, span, ids, where, where_params)
        key = bucket_key(interval, zone, MIDDAY_OF_DAY if span[0] == "day" and not utc else "bucket")
        parts.append(f"SELECT link_id, {key} AS k, {counted} AS clicks{extra} {sql}")
        params += span_params
    if not utc and (moved := moved_hours(interval, zone, start, end)):
        into, out_of = bucket_key(interval, zone), bucket_key(interval, zone, MIDDAY_OF_HOUR)
        parts.append(
            f"SELECT link_id, moved.k, moved.clicks FROM {table}_hour,"
            f" LATERAL (VALUES ({into}, {counted}), ({out_of}, -{counted})) moved (k, clicks)"
            " WHERE link_id = ANY(%s) AND bucket = ANY(%s::timestamptz[])"
            f" AND bucket < (SELECT folded_before FROM click_day_fold){where}"
        )
        params += [ids, moved, *where_params]
    return parts, params


def bucket_key(interval: str, zone: tzinfo, column: str = "bucket") -> str:
    """SQL of the bucket a row's hour (or day) falls in: an hour as it is,
    a local day, week or month as a timestamp without time zone."""
    if interval == "hour":
        return f"date_trunc('hour', {column})"
    return f"date_trunc('{interval}', {column} AT TIME ZONE '{zone_name(zone)}')"


def from_key(interval: str, zone: tzinfo):
    """Python of the bucket from the epoch seconds of bucket_key."""
    if interval == "hour":
        return lambda seconds: datetime.fromtimestamp(seconds, zone)
    return lambda seconds: (EPOCH + timedelta(seconds=seconds)).replace(tzinfo=zone)

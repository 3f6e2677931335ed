"""Reports in a time zone, by week and month, with totals, comparisons and
filters: clicks through the real importer, read by clicks.selectors."""

import random
import threading
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import psycopg
import pytest
from django.db import connection

from clicks.calendar import bucket_end, bucket_start, hour_ceil, next_bucket, stats_range
from clicks.report_queries import Point, ReportTooLarge, Totals, one_snapshot
from clicks.report_spans import moved_hours
from clicks.reports import link_stats, link_totals
from clicks.rollups import fold_days
from links.models import Link
from testing.factories import make_link, make_user
from testing.streams import entry
from testing.streams import importer as make_importer

from .test_rollups import CHROME, GOOGLEBOT, IPHONE, click

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_rollups")]

BERLIN = ZoneInfo("Europe/Berlin")
KOLKATA = ZoneInfo("Asia/Kolkata")  # +05:30 all year
LONDON = ZoneInfo("Europe/London")
CAIRO = ZoneInfo("Africa/Cairo")  # clocks go forward at midnight
HAVANA = ZoneInfo("America/Havana")  # clocks go back from 01:00 to midnight
UTC = timezone.utc


def _winter_wednesday() -> datetime:
    """A Wednesday (the 8th to the 20th of its month) of Berlin's winter time,
    the latest at least 40 days ago: its clicks, and some three weeks before,
    are within the importer's 400 days."""
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=40)
    while not (
        day.weekday() == 2
        and 8 <= day.day <= 20
        and all((day + timedelta(days=n)).astimezone(BERLIN).utcoffset() == timedelta(hours=1) for n in (-21, 14))
    ):
        day -= timedelta(days=1)
    return day


MIDNIGHT = _winter_wednesday()
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"


@pytest.fixture
def link() -> Link:
    return make_link(owner=make_user(), url="https://example.com/", slug="s" + uuid.uuid4().hex[:10])


@pytest.fixture
def store(link):
    importer = make_importer("selectors")

    def store(*clicks: dict) -> None:
        assert importer.store(importer.maker.make([entry(list(clicks))])) == len(clicks)

    return store


def another_link(link: Link) -> Link:
    """A second link of the same owner and team."""
    return make_link(owner=link.owner, team=link.team, url="https://example.com/", slug="s" + uuid.uuid4().hex[:10])


def stats(link, start, end, **options):
    return link_stats(link_ids=[link.pk], start=start, end=end, **options)


def test_buckets_of_a_zone():
    moment = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)  # Berlin: 01:30 CET, the night clocks go forward
    assert bucket_start(moment, "day", BERLIN) == datetime(2026, 3, 29, tzinfo=BERLIN)
    short_day = datetime(2026, 3, 29, tzinfo=BERLIN)
    assert next_bucket(short_day, "day", BERLIN).astimezone(UTC) - short_day.astimezone(UTC) == timedelta(hours=23)
    assert bucket_start(moment, "week", BERLIN) == datetime(2026, 3, 23, tzinfo=BERLIN)  # the Monday
    assert bucket_start(moment, "month", BERLIN) == datetime(2026, 3, 1, tzinfo=BERLIN)
    assert next_bucket(datetime(2026, 12, 1, tzinfo=BERLIN), "month", BERLIN) == datetime(2027, 1, 1, tzinfo=BERLIN)
    # An hour is a UTC hour, shown in the zone.
    assert bucket_start(moment, "hour", KOLKATA) == datetime(2026, 3, 29, 5, 30, tzinfo=KOLKATA)
    assert bucket_end(datetime(2026, 3, 29, tzinfo=BERLIN), "day", BERLIN) == datetime(2026, 3, 29, tzinfo=BERLIN)


def test_a_local_midnight_the_clocks_skip_or_repeat_begins_its_bucket_at_the_instant_it_names():
    # An aware datetime at a local time a change of clocks skips or repeats
    # compares unequal to any of another zone (PEP 495): hour_ceil and
    # bucket_end took such a midnight for an instant between hours, and a
    # report beginning on that day lost its first hour.
    skipped = datetime(2024, 4, 26, tzinfo=CAIRO)  # 00:00 EET is not shown: 22:00 UTC is 01:00 EEST
    assert hour_ceil(skipped) == datetime(2024, 4, 25, 22, tzinfo=UTC)
    assert bucket_end(datetime(2024, 4, 25, 22, tzinfo=UTC), "day", CAIRO).timestamp() == skipped.timestamp()
    repeated = datetime(2026, 11, 1, tzinfo=HAVANA)  # clocks go back from 01:00 to 00:00: the first, -04:00
    assert hour_ceil(repeated) == datetime(2026, 11, 1, 4, tzinfo=UTC)
    assert bucket_end(datetime(2026, 11, 1, 4, tzinfo=UTC), "month", HAVANA).timestamp() == repeated.timestamp()


def test_a_filtered_series_moves_the_hours_of_another_bucket_than_their_days_midday():
    # day_parts counts a UTC day's row in the bucket of its midday and
    # moves the hours of other buckets: those moved_hours names,
    # against each hour's own bucket, in zones whose clocks change at
    # midnight, by half hours, on two sides of a UTC midday, or not at all.
    start, end = datetime(2025, 10, 1, 5, tzinfo=UTC), datetime(2026, 11, 20, tzinfo=UTC)
    zones = [BERLIN, LONDON, KOLKATA, CAIRO, HAVANA, ZoneInfo("America/Santiago"), ZoneInfo("Asia/Beirut")]
    zones += [ZoneInfo("Atlantic/Azores"), ZoneInfo("Australia/Lord_Howe"), ZoneInfo("Pacific/Kiritimati")]
    for zone in zones:
        for interval in ("day", "week", "month"):
            expected, day = [], bucket_end(start, "day")
            while day < bucket_start(end, "day"):
                midday = bucket_start(day + timedelta(hours=12), interval, zone)
                hours = [day + timedelta(hours=n) for n in range(24)]
                expected += [hour for hour in hours if bucket_start(hour, interval, zone) != midday]
                day += timedelta(days=1)
            assert moved_hours(interval, zone, start, end) == expected, (zone, interval)


def test_days_of_a_zone_are_its_own_and_a_half_hour_zone_gets_the_hours_that_start_in_its_day(link, store):
    # 22:30 UTC the day before is that day in UTC and in Berlin (23:30), and
    # the day itself in Kolkata (04:00). 23:10 UTC is the day in Berlin
    # (00:10). 18:40 UTC on the day is 00:10 the next day in Kolkata, but its
    # UTC hour, 18:00, starts at 23:30 there: it counts on the day.
    store(
        click(link, MIDNIGHT - timedelta(minutes=90), "203.0.113.5", CHROME),
        click(link, MIDNIGHT - timedelta(minutes=50), "203.0.113.5", CHROME),
        click(link, MIDNIGHT + timedelta(hours=18, minutes=40), "198.51.100.1", IPHONE),
    )
    start, end = MIDNIGHT - timedelta(days=2), MIDNIGHT + timedelta(days=2)
    utc = stats(link, start, end, interval="day")
    day, before = MIDNIGHT.date(), MIDNIGHT.date() - timedelta(days=1)

    def local(when, zone):
        return datetime.combine(when, datetime.min.time(), tzinfo=zone)

    assert utc.series == [Point(local(before, UTC), 2, 1), Point(local(day, UTC), 1, 1)]
    berlin = stats(link, start, end, interval="day", zone=BERLIN)
    assert berlin.series == [Point(local(before, BERLIN), 1, 1), Point(local(day, BERLIN), 2, 2)]
    kolkata = stats(link, start, end, interval="day", zone=KOLKATA)
    assert kolkata.series == [Point(local(day, KOLKATA), 3, 2)]
    assert kolkata.series[0].bucket.utcoffset() == timedelta(hours=5, minutes=30)
    hours = stats(link, start, end, interval="hour", zone=KOLKATA)
    assert [point.bucket.strftime("%H:%M") for point in hours.series] == ["03:30", "04:30", "23:30"]
    # The same figures once the days are folded (the day tables serve UTC only).
    fold_days(until=datetime.now(UTC))
    assert stats(link, start, end, interval="day") == utc
    assert stats(link, start, end, interval="day", zone=BERLIN) == berlin


def test_weeks_months_totals_and_the_period_before(link, store):
    tuesday = MIDNIGHT + timedelta(days=6)
    store(
        click(link, MIDNIGHT + timedelta(hours=1), "203.0.113.5", CHROME),
        click(link, tuesday, "203.0.113.5", CHROME),
        click(link, tuesday + timedelta(hours=2), "198.51.100.1", IPHONE),
        click(link, tuesday + timedelta(hours=3), "66.249.66.1", GOOGLEBOT),
        click(link, MIDNIGHT - timedelta(days=20), "203.0.113.77", FIREFOX),  # the month before
    )
    monday = MIDNIGHT - timedelta(days=2)
    start, end = monday, monday + timedelta(days=14)
    weeks = stats(link, start, end, interval="week", compare=True, now=end + timedelta(days=30))
    assert weeks.series == [Point(monday, 1, 1), Point(monday + timedelta(days=7), 2, 2)]
    assert weeks.totals == Totals(clicks=3, visitors=2, bots=1)
    # The fortnight before, which the click of the month before is not in.
    assert weeks.previous == Totals(clicks=0, visitors=0, bots=0)
    month = bucket_start(MIDNIGHT, "month")
    months = stats(link, month - timedelta(days=1), end, interval="month", include_bots=True)
    assert months.series == [Point(bucket_start(month - timedelta(days=1), "month"), 1, 1), Point(month, 4, 3)]
    assert months.totals == Totals(clicks=5, visitors=4, bots=1)
    # The range ends in the future: it is compared with as much before it as has passed.
    days = stats(link, tuesday, end, compare=True, now=tuesday + timedelta(days=1))
    assert days.totals.clicks == 2 and days.previous == Totals(clicks=0, visitors=0, bots=0)
    week_before = stats(link, tuesday, end, compare=True, now=tuesday + timedelta(days=7))
    assert week_before.previous == Totals(clicks=1, visitors=1, bots=0)


def test_one_filter_reads_the_breakdown_rollups_and_the_other_breakdowns_the_raw_clicks(link, store, settings):
    store(
        click(link, MIDNIGHT + timedelta(hours=1), "203.0.113.5", CHROME, "https://www.google.com/"),
        click(link, MIDNIGHT + timedelta(hours=1), "203.0.113.6", CHROME, "https://news.example.org/"),
        click(link, MIDNIGHT + timedelta(hours=2), "198.51.100.1", IPHONE, "https://www.google.com/"),
        click(link, MIDNIGHT + timedelta(hours=3), "66.249.66.1", GOOGLEBOT, "https://www.google.com/"),
    )
    start, end = MIDNIGHT, MIDNIGHT + timedelta(days=1)
    google = stats(link, start, end, interval="hour", filters={"referer_host": "www.google.com"})
    assert google.series == [
        Point(MIDNIGHT + timedelta(hours=1), 1, None),
        Point(MIDNIGHT + timedelta(hours=2), 1, None),
    ]
    assert google.totals == Totals(clicks=2, visitors=None, bots=1)
    assert google.breakdowns["browser"] == [("Chrome", 1), ("Mobile Safari", 1)]
    assert google.breakdowns["referer_host"] == [("www.google.com", 2)]
    assert google.sample == 2
    with_bots = stats(link, start, end, interval="day", include_bots=True, filters={"referer_host": "www.google.com"})
    assert with_bots.series == [Point(MIDNIGHT, 3, None)] and with_bots.totals.clicks == 3
    # The breakdowns count the latest matching clicks only.
    settings.REPORT_FILTER_SAMPLE = 1
    latest = stats(link, start, end, include_bots=True, filters={"referer_host": "www.google.com"})
    assert latest.sample == 1 and latest.breakdowns["browser"] == [("Googlebot", 1)]
    assert latest.totals.clicks == 3  # the totals are not sampled


def test_several_filters_read_the_raw_clicks(link, store):
    store(
        click(link, MIDNIGHT + timedelta(hours=1), "203.0.113.5", CHROME, "https://www.google.com/"),
        click(link, MIDNIGHT + timedelta(hours=1), "203.0.113.5", CHROME, "https://news.example.org/"),
        click(link, MIDNIGHT + timedelta(hours=2), "198.51.100.1", IPHONE, "https://www.google.com/"),
    )
    report = stats(
        link,
        MIDNIGHT,
        MIDNIGHT + timedelta(days=1),
        interval="hour",
        zone=KOLKATA,
        filters={"referer_host": "www.google.com", "browser": "Chrome"},
        compare=True,
        now=MIDNIGHT + timedelta(days=2),
    )
    assert report.series == [Point(MIDNIGHT + timedelta(hours=1), 1, None)]
    assert report.series[0].bucket.tzinfo is KOLKATA
    assert report.totals == Totals(clicks=1, visitors=None, bots=0)
    assert report.previous == Totals(clicks=0, visitors=None, bots=0)
    assert report.breakdowns["os"] == [("Windows", 1)]


def test_a_raw_report_that_would_take_too_long_is_refused(link, store, settings):
    store(click(link, MIDNIGHT + timedelta(hours=1), "203.0.113.5", CHROME))
    settings.REPORT_RAW_TIMEOUT_MS = 200
    locked, release = threading.Event(), threading.Event()
    db = connection.settings_dict

    def hold_a_lock():
        with psycopg.connect(
            host=db["HOST"], port=db["PORT"], user=db["USER"], password=db["PASSWORD"], dbname=db["NAME"]
        ) as other:
            other.execute("LOCK TABLE clicks IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(10)

    holder = threading.Thread(target=hold_a_lock)
    holder.start()
    try:
        assert locked.wait(10)
        with pytest.raises(ReportTooLarge, match="shorter range"):
            stats(link, MIDNIGHT, MIDNIGHT + timedelta(days=1), filters={"browser": "Chrome"})
    finally:
        release.set()
        holder.join()
    # The connection is usable, and without the timeout, once the report is over.
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"
    assert stats(link, MIDNIGHT, MIDNIGHT + timedelta(days=1), filters={"browser": "Chrome"}).sample == 1


def test_reads_in_one_snapshot_count_the_same_clicks_while_a_batch_commits_between_them(link, store):
    at, day = MIDNIGHT + timedelta(hours=1), MIDNIGHT + timedelta(days=1)
    store(click(link, at, "203.0.113.5", CHROME))

    def another_batch():  # from another connection, as the importer commits one
        try:
            store(click(link, at, "203.0.113.6", CHROME))
        finally:
            connection.close()

    with one_snapshot():
        totals = link_totals(link_ids=[link.pk])[link.pk]
        committed = threading.Thread(target=another_batch)
        committed.start()
        committed.join()
        report = stats(link, MIDNIGHT, day)
    assert (totals.clicks, report.totals.clicks) == (1, 1)
    assert (link_totals(link_ids=[link.pk])[link.pk].clicks, stats(link, MIDNIGHT, day).totals.clicks) == (2, 2)


def test_stats_range_counts_points_per_interval():
    end = datetime(2026, 6, 1, tzinfo=UTC)
    assert stats_range(start=end - timedelta(days=3000), end=end, interval="month").interval == "month"
    with pytest.raises(Exception, match="At most 2000 points"):
        stats_range(start=end - timedelta(days=90), end=end, interval="hour")
    span = stats_range(end=end, interval="week", zone=BERLIN)
    assert span.zone is BERLIN and span.end - span.start == timedelta(weeks=26)


def _last_change(zone: ZoneInfo, before: datetime, *, forward: bool | None = None) -> datetime:
    """The latest UTC midnight at or before `before` at which `zone`'s offset
    differs from that at the midnight before (forward only: grew; False:
    shrank; None: either)."""
    day = before.replace(hour=0, minute=0, second=0, microsecond=0)
    while True:
        was, now = (day - timedelta(days=1)).astimezone(zone).utcoffset(), day.astimezone(zone).utcoffset()
        if was != now and (forward is None or (now > was) == forward):
            return day
        day -= timedelta(days=1)


def _store_around(store, link, hours_only, anchors, visitors, rng) -> tuple[list, list, set]:
    """Clicks of the hours from 40 before to 70 after each of `anchors`, 0 to
    3 an hour, each by one of `visitors`: all stored on `hours_only`, and on
    `link` all but some 3 in 10, the late ones. Returns the clicks' moments,
    their visitors and the late ones' places, for the caller to store late."""
    moments = [
        anchor + timedelta(hours=hour, minutes=rng.randint(0, 59))
        for anchor in anchors
        for hour in range(-40, 70)
        for _ in range(rng.choice([0, 1, 1, 2, 3]))
    ]
    picks = [rng.choice(visitors) for _ in moments]
    late = {n for n in range(len(moments)) if rng.random() < 0.3}
    store(*(click(hours_only, moment, *pick) for moment, pick in zip(moments, picks, strict=True)))
    store(*(click(link, moments[n], *picks[n]) for n in range(len(moments)) if n not in late))
    return moments, picks, late


def _cases(spans, zones, filters) -> list[tuple]:
    """Reports by day, week and month, with and without bots: (span, zone,
    interval, bots, the filter's place in `filters`) of each combination."""
    return [
        (span, zone, interval, bots, n)
        for span in spans
        for zone in zones
        for interval in ("day", "week", "month")
        for bots in (False, True)
        for n in range(len(filters))
    ]


def _series(of, cases, filters) -> dict[tuple, list]:
    """The series of `of` in each of `cases` (_cases)."""
    return {
        (span, zone, interval, bots, n): stats(
            of, *span, interval=interval, zone=zone, include_bots=bots, filters=filters[n]
        ).series
        for span, zone, interval, bots, n in cases
    }


def test_local_days_read_from_six_hours_as_from_hours_late_clicks_included(link, store):
    # A zone's local days, weeks and months read the six hours that lie in one
    # of them from click_rollup_6h once they are folded. The same clicks on a
    # second link, each stored before anything was folded, give the figures
    # read from hours alone; on the first link some come after the fold,
    # late, into hours and six hours already folded. The clicks are of the
    # days around Berlin's last change of clocks, whose day has 23 or 25 hours.
    shift = _last_change(BERLIN, datetime.now(UTC) - timedelta(days=3))
    hours_only = another_link(link)
    visitors = [(f"203.0.113.{n}", ua) for n in range(1, 5) for ua in (CHROME, IPHONE, FIREFOX, GOOGLEBOT)]
    moments, picks, late = _store_around(store, link, hours_only, [shift], visitors, random.Random(6))
    start, end = shift - timedelta(days=3), shift + timedelta(days=4)
    zones = [BERLIN, KOLKATA, ZoneInfo("Asia/Kathmandu"), ZoneInfo("America/New_York"), ZoneInfo("Australia/Adelaide")]
    cases = [
        (zone, interval, bots) for zone in zones for interval in ("day", "week", "month") for bots in (False, True)
    ]

    def report(of):
        return {
            case: stats(of, start, end, interval=case[1], zone=case[0], include_bots=case[2]).series for case in cases
        }

    expected = report(hours_only)
    fold_days(until=datetime.now(UTC))
    store(*(click(link, moments[n], *picks[n]) for n in sorted(late)))
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), sum(clicks) FROM click_rollup_6h WHERE link_id = %s", [link.pk])
        blocks, clicks = cursor.fetchone()
    assert blocks >= 15 and clicks == len(moments)
    assert sum(point.clicks for point in expected[BERLIN, "day", True]) == len(moments)
    assert report(link) == expected
    assert report(hours_only) == expected
    # Six hours folded without their row (by an importer of the version
    # before this table, during an upgrade) are read from their hours.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM click_rollup_6h WHERE link_id = %s AND bucket < %s", [link.pk, shift])
        assert cursor.rowcount >= 5
    assert report(link) == expected


def test_local_days_under_a_filter_read_days_and_the_hours_they_move_as_from_hours_late_clicks_included(link, store):
    # Under a filter there are no six hours: a zone's local days, weeks and
    # months read each folded UTC day's breakdown row in the bucket of its
    # midday, and move the day's hours of another bucket out of it into
    # theirs. The same clicks on a second link, each stored before anything
    # was folded, give the figures read from hours alone; on the first link
    # some come after the fold, late. The clicks are of the days around
    # Berlin's last change of clocks (a day of 23 or 25 hours) and London's
    # last spring (a UTC day holding two London midnights, 00:00 and 23:00).
    now = datetime.now(UTC)
    anchors = [
        _last_change(BERLIN, now - timedelta(days=3)),
        _last_change(LONDON, now - timedelta(days=3), forward=True),
    ]
    hours_only = another_link(link)
    referrers = ["", "https://www.google.com/", "https://t.co/x"]
    visitors = [
        (f"203.0.113.{n}", ua, ref) for n in range(1, 4) for ua in (CHROME, IPHONE, GOOGLEBOT) for ref in referrers
    ]
    moments, picks, late = _store_around(store, link, hours_only, anchors, visitors, random.Random(30))
    zones = [
        BERLIN,
        LONDON,
        KOLKATA,
        ZoneInfo("Asia/Kathmandu"),  # +05:45
        ZoneInfo("America/New_York"),
        ZoneInfo("Australia/Adelaide"),
        ZoneInfo("Pacific/Tarawa"),  # +12: a local day begins at a UTC day's midday
        ZoneInfo("Pacific/Kiritimati"),  # +14: a UTC day's midday is the next local day
        ZoneInfo("Pacific/Pago_Pago"),  # -11
    ]
    filters = [{"browser": "Chrome"}, {"referer_host": "www.google.com"}, {"browser": "Googlebot"}]
    spans = {anchor: (anchor - timedelta(days=3), anchor + timedelta(days=4)) for anchor in anchors}
    cases = _cases(spans.values(), zones, filters)

    def report(of):
        return _series(of, cases, filters)

    expected = report(hours_only)
    for anchor in anchors:
        assert sum(p.clicks for p in expected[spans[anchor], BERLIN, "day", True, 0]) == sum(
            1
            for moment, pick in zip(moments, picks, strict=True)
            if pick[1] == CHROME and abs(moment - anchor) < timedelta(days=4)
        )
    # A fold that stops at 05:00 of a day of the Berlin clicks: the day's
    # row holds its first five hours, and the rest are read as hours.
    fold_days(until=anchors[0] + timedelta(hours=5))
    assert report(hours_only) == expected
    store(*(click(link, moments[n], *picks[n]) for n in sorted(late) if n % 2))
    fold_days(until=now)
    store(*(click(link, moments[n], *picks[n]) for n in sorted(late) if not n % 2))
    assert report(link) == expected
    assert report(hours_only) == expected


def test_zones_whose_clocks_change_at_midnight_read_six_hours_and_days_as_from_hours(link, store):
    # In a zone whose clocks change at its midnight, the day of a change
    # begins at a midnight the clocks skip (to 01:00) or ends in an hour
    # they repeat (its midnight comes twice): the buckets read from six
    # hours, and under a filter from days and the hours they move, are those
    # read from hours alone, late clicks included. The clicks are of the
    # days around each zone's last change of clocks; a report begins three
    # days before it, and one at the start of the change's own local day.
    now = datetime.now(UTC)
    zones = [CAIRO, HAVANA, ZoneInfo("America/Santiago")]
    anchors = [_last_change(zone, now - timedelta(days=3)) for zone in zones]
    ranges = {anchor: [(anchor - timedelta(days=3), anchor + timedelta(days=4))] for anchor in anchors}
    for anchor, zone in zip(anchors, zones, strict=True):
        change = next(
            anchor - timedelta(hours=n)
            for n in range(1, 25)
            if (anchor - timedelta(hours=n)).astimezone(zone).utcoffset() != anchor.astimezone(zone).utcoffset()
        ) + timedelta(hours=1)
        day = bucket_start(change, "day", zone)
        assert day <= change < next_bucket(day, "day", zone)
        ranges[anchor].append((day, day + timedelta(days=3)))
    hours_only = another_link(link)
    visitors = [(f"203.0.113.{n}", ua) for n in range(1, 4) for ua in (CHROME, IPHONE, GOOGLEBOT)]
    moments, picks, late = _store_around(store, link, hours_only, anchors, visitors, random.Random(62))
    filters = [None, {"browser": "Chrome"}]
    cases = _cases([span for anchor in anchors for span in ranges[anchor]], zones, filters)

    def report(of):
        return _series(of, cases, filters)

    expected = report(hours_only)
    for anchor, zone in zip(anchors, zones, strict=True):
        # The days of the report that begins with the change's day are the
        # zone's, by Python's own reckoning of each click's local date.
        start, end = ranges[anchor][1]
        days = expected[ranges[anchor][1], zone, "day", True, 0]
        assert {p.bucket.astimezone(zone).date(): p.clicks for p in days if p.clicks} == Counter(
            moment.astimezone(zone).date() for moment in moments if start <= moment < end
        )
        assert days[0].bucket.timestamp() == start.timestamp() and len(days) == 3
    fold_days(until=now)
    store(*(click(link, moments[n], *picks[n]) for n in sorted(late)))
    assert report(link) == expected
    assert report(hours_only) == expected


def test_breakdowns_read_whole_months_from_the_month_rows_as_from_hours_late_clicks_included(link, store):
    # A range's breakdowns read the UTC months it holds whole from
    # click_breakdown_month, which holds the days the fold has gone past
    # whole, and the rest from days and hours. The same clicks on a second
    # link, each stored before anything was folded, give the figures read
    # from hours alone; on the first link some come late: after a fold that
    # stopped in the middle of a month, and after one up to now.
    rng = random.Random(12)
    hours_only = another_link(link)
    now = datetime.now(UTC)
    first = bucket_start(now - timedelta(days=100), "month")
    middle = bucket_start(first + timedelta(days=45), "day") + timedelta(hours=5)
    referrers = ["", "https://www.google.com/", "https://t.co/x", "https://news.example.org/a"]
    visitors = [
        (f"203.0.113.{n}", ua, rng.choice(referrers)) for n in range(1, 6) for ua in (CHROME, IPHONE, GOOGLEBOT)
    ]
    # All before the hour before this one: every click is folded below.
    span = int((now - timedelta(hours=2) - first).total_seconds()) + 10 * 86_400
    moments = [first - timedelta(days=10) + timedelta(seconds=rng.randrange(span)) for _ in range(300)]
    # Clicks on the day the first fold stops in, before and after its mark.
    moments += [middle - timedelta(hours=3), middle - timedelta(minutes=1), middle + timedelta(minutes=1)]
    picks = [rng.choice(visitors) for _ in moments]
    late = [n for n in range(len(moments)) if n >= 300 or rng.random() < 0.3]
    store(*(click(hours_only, moment, *pick) for moment, pick in zip(moments, picks, strict=True)))
    store(*(click(link, moments[n], *picks[n]) for n in range(len(moments)) if n not in late))
    ranges = [
        (first - timedelta(days=5, hours=3), now + timedelta(hours=1), UTC),
        (first, bucket_start(now, "month"), UTC),
        (first + timedelta(days=1, hours=7), first + timedelta(days=45), UTC),
        (first.replace(tzinfo=KOLKATA), now, KOLKATA),
    ]
    cases = [(lo, hi, zone, bots, top) for lo, hi, zone in ranges for bots in (False, True) for top in (None, 2)]

    def report(of):
        return {
            (lo, hi, bots, top): stats(of, lo, hi, interval="month", zone=zone, include_bots=bots, top=top).breakdowns
            for lo, hi, zone, bots, top in cases
        }

    def month_rows():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(DISTINCT bucket), coalesce(sum(clicks), 0) FROM click_breakdown_month"
                " WHERE link_id = %s AND dimension = 'browser'",
                [link.pk],
            )
            return cursor.fetchone()

    expected = report(hours_only)
    assert sum(clicks for _, clicks in expected[(*ranges[0][:2], True, None)]["browser"]) == len(moments)
    fold_days(until=middle)
    store(*(click(link, moments[n], *picks[n]) for n in late))
    assert report(link) == expected
    months, clicks = month_rows()
    assert months >= 2 and clicks == sum(1 for moment in moments if moment < bucket_start(middle, "day"))
    fold_days(until=now)
    assert report(link) == report(hours_only) == expected
    # Late after the fold up to now, on both links.
    later = [(first + timedelta(seconds=rng.randrange(span - 10 * 86_400)), rng.choice(visitors)) for _ in range(60)]
    for of in (link, hours_only):
        store(*(click(of, moment, *pick) for moment, pick in later))
    assert report(link) == report(hours_only) != expected
    months, clicks = month_rows()
    assert months >= 4 and clicks == sum(
        1 for moment in [*moments, *(moment for moment, _ in later)] if moment < bucket_start(now, "day")
    )

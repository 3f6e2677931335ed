"""Rollups written by the importer and read by the selectors, on the real PostgreSQL."""

import uuid
from datetime import datetime, timedelta, timezone
from importlib import import_module

import pytest
from django.db import connection

from clicks.calendar import bucket_start
from clicks.importer import ClickImporter
from clicks.report_queries import Point
from clicks.reports import LinkTotals, link_stats, link_totals
from clicks.rollups import fold_days
from links import services
from links.models import Link
from testing.factories import make_link, make_user
from testing.streams import ENRICHER, entry
from testing.streams import importer as make_importer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_rollups")]

CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
)
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
DAY = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
TEN, ELEVEN = DAY + timedelta(hours=10), DAY + timedelta(hours=11)


def click(link: Link | str, at: datetime, ip: str, ua: str, ref: str = "") -> dict:
    """A click on a link, or an orphan visit to a slug that has none."""
    slug, link_id = (link, None) if isinstance(link, str) else (link.slug, link.pk)
    return {"ts": int(at.timestamp() * 1000), "slug": slug, "link": link_id, "ip": ip, "ua": ua, "ref": ref}


@pytest.fixture
def link() -> Link:
    return make_link(owner=make_user(), url="https://example.com/", slug="r" + uuid.uuid4().hex[:10])


@pytest.fixture
def importer() -> ClickImporter:
    return make_importer("rollups")


def store(importer: ClickImporter, entries) -> int:
    return importer.store(importer.maker.make(entries))


@pytest.fixture
def traffic(link, importer):
    """Hour 10: a Chrome visitor from Google twice, an iPhone visitor once.
    Hour 11: the Chrome visitor (another address in the same /24) again, Googlebot twice."""
    slug = link
    hour_ten = entry(
        [
            click(slug, TEN + timedelta(minutes=1), "203.0.113.5", CHROME, "https://www.google.com/"),
            click(slug, TEN + timedelta(minutes=2), "203.0.113.5", CHROME, "https://www.google.com/"),
            click(slug, TEN + timedelta(minutes=3), "198.51.100.1", IPHONE),
        ]
    )
    hour_eleven = entry(
        [
            click(slug, ELEVEN + timedelta(minutes=1), "203.0.113.99", CHROME, "https://www.google.com/q"),
            click(slug, ELEVEN + timedelta(minutes=2), "66.249.66.1", GOOGLEBOT),
            click(slug, ELEVEN + timedelta(minutes=3), "66.249.66.1", GOOGLEBOT),
        ]
    )
    assert store(importer, [hour_ten]) == 3
    # Delivered again together with new clicks (a crash between COMMIT and
    # XACK): the rollups count only the three new ones.
    assert store(importer, [hour_ten, hour_eleven]) == 3
    assert store(importer, [hour_ten, hour_eleven]) == 0
    return link


def test_hourly_series_leaves_bots_out_by_default(traffic):
    stats = link_stats(
        link_ids=[traffic.pk], start=TEN + timedelta(minutes=30), end=ELEVEN + timedelta(minutes=5), interval="hour"
    )
    assert stats.series == [Point(bucket=TEN, clicks=3, visitors=2), Point(bucket=ELEVEN, clicks=1, visitors=1)]
    assert stats.clicks == 4
    assert stats.breakdowns["browser"] == [("Chrome", 3), ("Mobile Safari", 1)]
    assert stats.breakdowns["referer_host"] == [("www.google.com", 3), ("", 1)]
    assert stats.breakdowns["device"] == [("desktop", 3), ("mobile", 1)]
    assert stats.breakdowns["os"] == [("Windows", 3), ("iOS", 1)]
    assert stats.breakdowns["country"][0][1] + sum(n for _, n in stats.breakdowns["country"][1:]) == 4


def test_bots_are_included_on_request(traffic):
    stats = link_stats(
        link_ids=[traffic.pk], start=TEN, end=ELEVEN + timedelta(hours=1), interval="hour", include_bots=True
    )
    assert stats.series == [Point(bucket=TEN, clicks=3, visitors=2), Point(bucket=ELEVEN, clicks=3, visitors=2)]
    assert ("Googlebot", 2) in stats.breakdowns["browser"]
    assert ("bot", 2) in stats.breakdowns["device"]


def test_daily_visitors_are_distinct_over_the_day(traffic):
    stats = link_stats(link_ids=[traffic.pk], start=DAY, end=DAY + timedelta(days=1), interval="day", include_bots=True)
    # Chrome (the same /24 and agent in both hours), iPhone, Googlebot.
    assert stats.series == [Point(bucket=DAY, clicks=6, visitors=3)]
    human = link_stats(link_ids=[traffic.pk], start=DAY, end=DAY + timedelta(days=1), interval="day")
    assert human.series == [Point(bucket=DAY, clicks=4, visitors=2)]


def test_many_visitors_are_estimated_closely_and_a_redelivery_adds_none(link, importer):
    # 3,000 clicks by 2,000 visitors (distinct /24s), a third of them twice:
    # past the 320 a sketch counts exactly, so an estimate within 5%.
    visitors = [f"10.{n // 256}.{n % 256}.7" for n in range(2000)]
    clicks = [click(link, TEN + timedelta(seconds=n), visitors[n % 2000], CHROME) for n in range(3000)]
    entries = [entry(clicks[at : at + 100]) for at in range(0, 3000, 100)]
    assert store(importer, entries[:20]) == 2000
    assert store(importer, entries) == 1000  # the first 20 entries again, with 10 new ones
    stats = link_stats(link_ids=[link.pk], start=TEN, end=ELEVEN, interval="hour")
    [point] = stats.series
    assert point.clicks == 3000
    assert 1900 <= point.visitors <= 2100
    assert store(importer, entries) == 0
    assert link_stats(link_ids=[link.pk], start=TEN, end=ELEVEN, interval="hour").series == [point]


def test_days_folded_from_closed_hours_read_the_same_and_late_clicks_count_once(traffic, importer):
    def stats():
        around = dict(
            link_ids=[traffic.pk], start=DAY - timedelta(days=1), end=DAY + timedelta(days=1), include_bots=True
        )
        return link_stats(interval="day", **around), link_stats(interval="hour", **around)

    def day_tables():
        with connection.cursor() as cursor:
            cursor.execute("SELECT clicks, visitors FROM click_rollup_day WHERE link_id = %s", [traffic.pk])
            rollup = cursor.fetchall()
            cursor.execute(
                "SELECT (SELECT sum(clicks) FROM click_breakdown_day WHERE link_id = %(link)s AND dimension = 'os'),"
                " (SELECT sum(clicks) FROM click_breakdown_month WHERE link_id = %(link)s AND dimension = 'os')",
                {"link": traffic.pk},
            )
            days, months = cursor.fetchone()
            assert days == months
            return rollup, days

    before = stats()
    assert before[0].series == [Point(bucket=DAY, clicks=6, visitors=3)]
    assert day_tables() == ([], None), "nothing folded yet"
    fold_days(until=datetime.now(timezone.utc))
    assert stats() == before
    assert day_tables() == ([(6, 3)], 6)
    # A click for an hour folded already goes to the day tables itself.
    late = click(traffic, TEN + timedelta(minutes=30), "192.0.2.1", IPHONE, "https://t.co/x")
    assert store(importer, [entry([late])]) == 1
    assert fold_days(until=datetime.now(timezone.utc))[0] == fold_days(until=datetime.now(timezone.utc))[1]
    day, hour = stats()
    assert day.series == [Point(bucket=DAY, clicks=7, visitors=4)]
    assert day.breakdowns == hour.breakdowns and ("t.co", 1) in day.breakdowns["referer_host"]
    assert day_tables() == ([(7, 4)], 7)


def test_the_migration_to_six_hours_makes_them_of_the_hours_folded_as_the_fold_does(traffic, link, importer):
    # Hours 10 and 11 of a day folded; an hour of this link after the fold's
    # mark, which stays out.
    fold_days(until=datetime.now(timezone.utc) - timedelta(hours=1))
    assert store(importer, [entry([click(link, datetime.now(timezone.utc), "203.0.113.5", CHROME)])]) == 1
    rows = "SELECT * FROM click_rollup_6h ORDER BY link_id, bucket"
    with connection.cursor() as cursor:
        cursor.execute(rows)
        folded = cursor.fetchall()
        assert [row[:6] for row in folded] == [(traffic.pk, DAY + timedelta(hours=6), 6, 4, 3, 2)]
        cursor.execute("TRUNCATE click_rollup_6h")
        import_module("clicks.migrations.0004_six_hour_rollups").fill(cursor)
        cursor.execute(rows)
        assert cursor.fetchall() == folded


def test_the_migration_to_month_breakdowns_makes_them_of_the_days_folded_as_the_fold_does(traffic, link, importer):
    # The day before folded and gone past whole; this day's hours folded up
    # to the last, which stays out as does this day: the month rows hold the
    # days before the one the fold's mark is in.
    now = datetime.now(timezone.utc)
    assert store(importer, [entry([click(link, bucket_start(now, "day"), "203.0.113.5", CHROME)])]) == 1
    fold_days(until=now)
    assert store(importer, [entry([click(link, now, "203.0.113.5", CHROME)])]) == 1
    rows = "SELECT * FROM click_breakdown_month ORDER BY link_id, bucket, dimension, value"
    with connection.cursor() as cursor:
        cursor.execute(rows)
        folded = cursor.fetchall()
        month = bucket_start(DAY, "month")
        assert (traffic.pk, month, "browser", "Chrome", 3, 3) in folded
        assert {row[:3] for row in folded} == {
            (traffic.pk, month, "browser"),
            (traffic.pk, month, "os"),
            (traffic.pk, month, "device"),
            (traffic.pk, month, "referer_host"),
            (traffic.pk, month, "country"),
        }
        cursor.execute("TRUNCATE click_breakdown_month")
        import_module("clicks.migrations.0005_month_breakdowns").fill(cursor)
        cursor.execute(rows)
        assert cursor.fetchall() == folded


@pytest.fixture
def current_hour_not_folded():
    """The fold's mark at the start of this hour, as import_clicks leaves it
    between folds; put back afterwards (other tests' links are not read here)."""
    hour = bucket_start(datetime.now(timezone.utc), "hour")
    with connection.cursor() as cursor:
        cursor.execute("SELECT folded_before FROM click_day_fold")
        mark = cursor.fetchone()[0]
        cursor.execute("UPDATE click_day_fold SET folded_before = %s", [hour])
    yield hour
    with connection.cursor() as cursor:
        cursor.execute("UPDATE click_day_fold SET folded_before = %s", [mark])


def test_hours_not_folded_yet_count_in_their_day(link, importer, current_hour_not_folded):
    at = current_hour_not_folded + timedelta(seconds=1)
    assert store(importer, [entry([click(link, at, "203.0.113.5", CHROME)])]) == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM click_rollup_day WHERE link_id = %s", [link.pk])
        assert cursor.fetchone()[0] == 0
    around = dict(link_ids=[link.pk], start=at - timedelta(days=1), end=at + timedelta(days=1))
    day = link_stats(interval="day", **around)
    assert day.series == [Point(bucket=bucket_start(at, "day"), clicks=1, visitors=1)]
    assert day.breakdowns == link_stats(interval="hour", **around).breakdowns
    assert day.breakdowns["browser"] == [("Chrome", 1)]


def test_breakdowns_over_whole_days_and_partial_ends_agree(traffic):
    wide = link_stats(
        link_ids=[traffic.pk],
        start=DAY - timedelta(hours=12),
        end=DAY + timedelta(days=1, hours=5),
        interval="hour",
        include_bots=True,
    )
    narrow = link_stats(
        link_ids=[traffic.pk], start=TEN, end=ELEVEN + timedelta(hours=1), interval="hour", include_bots=True
    )
    assert wide.breakdowns == narrow.breakdowns
    assert sum(n for _, n in wide.breakdowns["browser"]) == 6
    top = link_stats(link_ids=[traffic.pk], start=DAY, end=DAY + timedelta(days=1), include_bots=True, top=1)
    assert top.breakdowns["browser"] == [("Chrome", 3)]


def test_totals_of_links_in_one_query(traffic, link, django_assert_num_queries):
    quiet = make_link(
        owner=traffic.owner, team=traffic.team, url="https://example.com/", slug="q" + uuid.uuid4().hex[:10]
    )
    with django_assert_num_queries(1):
        totals = link_totals(link_ids=[traffic.pk, quiet.pk])
    assert totals == {traffic.pk: LinkTotals(clicks=6, human_clicks=4), quiet.pk: LinkTotals()}


def test_stats_refuse_naive_datetimes_and_unknown_intervals(traffic):
    with pytest.raises(ValueError, match="timezone-aware"):
        link_stats(link_ids=[traffic.pk], start=datetime(2026, 1, 1), end=datetime(2026, 1, 2))
    with pytest.raises(ValueError, match="interval"):
        link_stats(link_ids=[traffic.pk], start=DAY, end=DAY, interval="minute")


def test_orphan_visits_are_stored_apart_with_their_slug(importer, link):
    orphan_slug = "gone" + uuid.uuid4().hex[:6]
    visit = click(orphan_slug, TEN, "203.0.113.5", GOOGLEBOT)
    assert store(importer, [entry([visit, click(link, TEN, "203.0.113.5", CHROME)])]) == 2
    with connection.cursor() as cursor:
        cursor.execute("SELECT slug, ip::text, is_bot, country FROM orphan_visits WHERE click_id = %s", [visit["id"]])
        country = ENRICHER.ip("203.0.113.5").country  # as the country database has it
        assert cursor.fetchall() == [(orphan_slug, "203.0.113.0/32", True, country)]
        cursor.execute("SELECT count(*) FROM clicks WHERE slug = %s", [orphan_slug])
        assert cursor.fetchone() == (0,)
    assert link_totals(link_ids=[link.pk])[link.pk] == LinkTotals(clicks=1, human_clicks=1)


def test_clicks_of_a_link_deleted_before_they_are_imported_are_dropped(importer, link):
    kept = make_link(owner=link.owner, team=link.team, url="https://example.com/", slug="k" + uuid.uuid4().hex[:10])
    stored = entry([click(link, TEN, "203.0.113.5", CHROME)])
    assert store(importer, [stored]) == 1
    waiting = entry([click(link, TEN, "203.0.113.6", CHROME), click(kept, TEN, "203.0.113.6", CHROME)])
    services.link_delete(link=link)

    assert store(importer, [waiting, stored]) == 1
    with connection.cursor() as cursor:
        for table in ("clicks", "click_rollup_hour", "click_breakdown_hour", "link_click_totals"):
            cursor.execute(
                f"SELECT link_id, count(*) FROM {table} WHERE link_id IN (%s, %s) GROUP BY 1", [link.pk, kept.pk]
            )
            assert cursor.fetchall() == [(kept.pk, 1 if table != "click_breakdown_hour" else 5)], table

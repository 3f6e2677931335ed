"""The same reports on both click stores: the same stream entries imported
into PostgreSQL (the rollups) and into a real ClickHouse cluster (18.16,
two shards of two replicas), then every kind of report asked of each, by
hour, day, week and month, in zones whose days are not UTC days, with
bots and without, under one filter and two, with the period before. The
answers are the same, and both importers add the same to the links'
all-time totals."""

import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.test import override_settings

from clicks import clickhouse_clicks
from clicks.batch import BatchMaker
from clicks.clickhouse_import import ClickHouseImporter
from clicks.reports import LinkTotals, link_stats, link_totals
from clicks.stream import ClickStream
from slingshot.redis import get_redis
from testing.factories import make_link, make_user
from testing.streams import ENRICHER, add_entry, importer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams")]

NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
]
REFERERS = ["", "https://news.example.org/a", "https://social.example.com/p/1", "android-app://com.example"]
ZONES = [UTC, ZoneInfo("Europe/Paris"), ZoneInfo("Asia/Kolkata"), ZoneInfo("America/New_York")]


@pytest.fixture(scope="module")
def migrated(clickhouse_cluster):
    urls = [arg for url in clickhouse_cluster.urls for arg in ("--url", url)]
    call_command("migrate_clicks", *urls, stdout=StringIO())
    return clickhouse_cluster


def _clicks(links, n: int, rng: random.Random) -> list[dict]:
    clicks = []
    for _ in range(n):
        link = rng.choice(links)
        moment = NOW - timedelta(minutes=rng.randrange(60 * 24 * 75))
        click = {
            "ts": int(moment.timestamp() * 1000) + rng.randrange(1000),
            "slug": link.slug,
            "link": link.pk,
            "ip": f"198.51.{rng.randrange(4)}.{rng.randrange(1, 40)}",
            "ua": rng.choice(AGENTS),
            "ref": rng.choice(REFERERS),
        }
        if rng.random() < 0.3:
            click["rule"] = rng.choice(["1", "2", "ab1"])
        clicks.append(click)
    return clicks


def _both_stores(cluster) -> list:
    """Three links' 1,500 clicks of the last 75 days in both stores."""
    owner = make_user()
    links = [
        make_link(owner=owner, url=f"https://example.org/{n}", slug=f"rep{n}{uuid.uuid4().hex[:8]}") for n in "abc"
    ]
    rng = random.Random(52)
    entries = [(uuid.uuid4().hex[:16], _clicks(links, 100, rng)) for _ in range(15)]
    for prefix, clicks in entries:
        add_entry(clicks, prefix=prefix)
    importer("rep-pg").run(once=True)
    ids = [link.pk for link in links]
    on_postgresql = link_totals(link_ids=ids)
    assert sum(totals.clicks for totals in on_postgresql.values()) == 1500
    for prefix, clicks in entries:  # the very same clicks, ids and all, again
        add_entry(clicks, prefix=prefix)

    def import_into_clickhouse():
        stream = ClickStream(get_redis(), consumer="rep-ch")
        ClickHouseImporter(stream=stream, maker=BatchMaker(ENRICHER, visitors_per_click=True)).run(once=True)

    _on("clickhouse", cluster.urls, import_into_clickhouse)
    # Every replica has them: a report may read either.
    local = "SELECT count() FROM clicks_local WHERE link_id IN %(ids)s"
    deadline = time.monotonic() + 30
    while sum(node.client().execute(local, {"ids": tuple(ids)})[0][0] for node in cluster.nodes) != 3000:
        assert time.monotonic() < deadline, "the cluster did not get every click on both replicas"
        time.sleep(0.2)
    # The ClickHouse importer adds to the links' all-time totals as the other
    # does (both did here, into the one database), and its rollup agrees.
    twice = link_totals(link_ids=ids)
    assert twice == {
        pk: LinkTotals(clicks=2 * totals.clicks, human_clicks=2 * totals.human_clicks)
        for pk, totals in on_postgresql.items()
    }
    rollup = (
        cluster.nodes[0]
        .client()
        .execute(
            "SELECT link_id, countMerge(clicks), countMergeIf(clicks, is_bot = 0) FROM click_rollup_hour"
            " WHERE link_id IN %(ids)s GROUP BY link_id",
            {"ids": tuple(ids)},
        )
    )
    assert {pk: LinkTotals(clicks, human) for pk, clicks, human in rollup} == on_postgresql
    return links


def _on(store: str, urls, ask):
    with override_settings(CLICK_STORE=store, CLICKHOUSE_URLS=urls):
        clickhouse_clicks.cluster.cache_clear()
        try:
            return ask()
        finally:
            clickhouse_clicks.cluster.cache_clear()


CASES = [
    (interval, zone, bots, filters)
    for interval in ("hour", "day", "week", "month")
    for zone in ZONES
    for bots in (False, True)
    for filters in ({}, {"browser": "Firefox"}, {"browser": "Chrome", "referer_host": "news.example.org"})
    if interval != "hour" or zone in (UTC, ZONES[2])
]


def test_every_report_reads_the_same_from_either_store(migrated):
    links = _both_stores(migrated)
    start, end = NOW - timedelta(days=40), NOW + timedelta(hours=1)  # and the 40 days before
    differ = []
    for interval, zone, bots, filters in CASES:

        def ask(interval=interval, zone=zone, bots=bots, filters=filters):
            return link_stats(
                link_ids=[link.pk for link in links[:2]],
                start=start,
                end=end,
                interval=interval,
                include_bots=bots,
                top=None if interval in ("week", "month") else 3,
                zone=zone,
                filters=filters,
                compare=True,
                now=NOW,
            )

        on_postgresql, on_clickhouse = _on("postgresql", [], ask), _on("clickhouse", migrated.urls, ask)
        assert on_postgresql.clicks > 0 and on_postgresql.previous.clicks > 0
        if on_clickhouse != on_postgresql:
            differ.append(((interval, str(zone), bots, filters), on_postgresql, on_clickhouse))
    assert not differ, differ[:2]
    assert len(CASES) == 84

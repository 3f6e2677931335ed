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
from itertools import product
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test import override_settings

from clicks import clickhouse_clicks
from clicks.batch import BatchMaker
from clicks.campaigns import campaign_clicks
from clicks.clickhouse_import import ClickHouseImporter
from clicks.orphans import orphan_visits, visits_after_the_end
from clicks.reports import LinkTotals, link_stats, link_totals
from clicks.services import link_visits_delete
from clicks.stream import ClickStream
from clicks.visits import VisitsRange, link_clicks, orphan_visit_counts, orphan_visits_page
from links.models import Link
from slingshot.redis import get_redis
from testing.clickhouse import on_every_replica
from testing.factories import make_link, make_user
from testing.streams import ENRICHER, add_entry, importer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams", "current_engine")]

NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
]
REFERERS = ["", "https://news.example.org/a", "https://social.example.com/p/1", "android-app://com.example"]
IOS = {"type": "device", "value": "ios"}


def _new_domains() -> list[str]:
    return [f"go-{uuid.uuid4().hex[:8]}.example.com", f"to-{uuid.uuid4().hex[:8]}.example.com"]


# The orphan visits' domains, new for each _both_stores: the cluster keeps
# what the session's earlier tests stored, which PostgreSQL's orphan_visits
# may not (a raw table, not flushed after each test, emptied by some).
DOMAINS = _new_domains()
ZONES = [UTC, ZoneInfo("Europe/Paris"), ZoneInfo("Asia/Kolkata"), ZoneInfo("America/New_York")]


def _clicks(links, n: int, rng: random.Random, between: tuple[datetime, datetime] | None = None) -> list[dict]:
    """n clicks of the links and orphan visits of the last 75 days, or n
    clicks of the links `between` two moments."""
    clicks = []
    for _ in range(n):
        link = rng.choice(links)
        if between:
            moment = between[0] + (between[1] - between[0]) * rng.random()
        else:
            moment = NOW - timedelta(minutes=rng.randrange(60 * 24 * 75))
        click = {
            "ts": int(moment.timestamp() * 1000) + (0 if between else rng.randrange(1000)),
            "slug": link.slug,
            "link": link.pk,
            "ip": f"198.51.{rng.randrange(4)}.{rng.randrange(1, 40)}",
            "ua": rng.choice(AGENTS),
            "ref": rng.choice(REFERERS),
        }
        if rng.random() < 0.1 and not between:  # an orphan visit
            click.update(slug=f"gone{rng.randrange(5)}", link=None, kind=rng.choice(["unknown", "expired"]))
            click["domain"] = rng.choice(DOMAINS)
        elif link.rules and rng.random() < 0.3:
            click["rule"] = "1"
        elif link.split:
            click["rule"] = rng.choice(["ab1", "ab2"])
        clicks.append(click)
    return clicks


def _import_into_clickhouse():
    stream = ClickStream(get_redis(), consumer="rep-ch")
    ClickHouseImporter(stream=stream, maker=BatchMaker(ENRICHER, visitors_per_click=True)).run(once=True)


def three_links() -> list:
    """A new person's three links: one with a UTM'd destination and a rule for
    iOS, a split in two UTM'd halves, a plain one."""
    owner = make_user()
    spring = "https://shop.example/spring?utm_source=newsletter&utm_campaign=spring"
    instagram = spring.replace("newsletter", "instagram")
    return [
        make_link(owner=owner, url=spring, rules=[{"url": instagram, "conditions": [IOS]}]),
        make_link(
            owner=owner,
            url="https://shop.example/ab",
            split=[
                {"url": "https://shop.example/a?utm_campaign=ab&utm_source=a", "weight": 1},
                {"url": "https://shop.example/b?utm_campaign=ab&utm_source=b", "weight": 1},
            ],
        ),
        make_link(owner=owner, url="https://example.org/c"),
    ]


def _both_stores(cluster, *, ties: int = 0) -> list:
    """Three links' clicks and some orphan visits, 1,500 of the last 75 days,
    and `ties` more of the third link in one millisecond, in both stores;
    the orphan visits on DOMAINS, which it makes new."""
    DOMAINS[:] = _new_domains()
    links = three_links()
    rng = random.Random(52)
    entries = [(uuid.uuid4().hex[:16], _clicks(links, 100, rng)) for _ in range(15)]
    if ties:
        moment = {"ts": int((NOW - timedelta(days=3)).timestamp() * 1000) + 250, "slug": links[2].slug}
        same = [{**moment, "link": links[2].pk, "ip": "198.51.3.3", "ua": AGENTS[0], "ref": ""}] * ties
        entries.append((uuid.uuid4().hex[:16], same))
    for prefix, clicks in entries:
        add_entry(clicks, prefix=prefix)
    importer("rep-pg").run(once=True)
    ids = [link.pk for link in links]
    on_postgresql = link_totals(link_ids=ids)
    served = sum(1 for _, clicks in entries for click in clicks if click["link"])
    assert sum(totals.clicks for totals in on_postgresql.values()) == served > 1200
    for prefix, clicks in entries:  # the very same clicks, ids and all, again
        add_entry(clicks, prefix=prefix)

    _on("clickhouse", cluster.urls, _import_into_clickhouse)
    on_every_replica(cluster, ids, served)
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
        clickhouse_clicks.forget_cluster()
        try:
            return ask()
        finally:
            clickhouse_clicks.forget_cluster()


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

    # 70 days hold a whole UTC month or two, whatever today is: the cluster's
    # breakdowns add its rollup's months to the raw clicks of the days at the ends.
    for zone, bots in product(ZONES, (False, True)):

        def breakdowns(zone=zone, bots=bots):
            ends = {"start": NOW - timedelta(days=70), "end": NOW + timedelta(hours=1), "zone": zone}
            return link_stats(link_ids=[link.pk for link in links], include_bots=bots, top=None, **ends).breakdowns

        on_postgresql = _on("postgresql", [], breakdowns)
        assert sum(n for _, n in on_postgresql["browser"]) > 500
        assert _on("clickhouse", migrated.urls, breakdowns) == on_postgresql, (zone, bots)


def _visits(rows) -> list[tuple]:
    return [
        (c.occurred_at, c.link_id, c.slug, str(c.ip), c.country, c.referer, c.referer_host, c.browser, c.os, c.device)
        + (c.is_bot, c.rule, c.agent.user_agent)
        for c in rows
    ]


def test_visits_one_by_one_and_the_campaign_report_read_the_same_from_either_store(migrated):
    links = _both_stores(migrated)
    pks = [link.pk for link in links]
    spans = [
        VisitsRange(),
        VisitsRange(include_bots=False),
        VisitsRange(start=NOW - timedelta(days=20), end=NOW - timedelta(days=2, minutes=7)),
    ]

    def ask():
        answers = []
        for span in spans:
            clicks = link_clicks(Link.objects.filter(pk__in=pks[:2]), span)
            answers.append((clicks.count(), _visits(clicks[0:40]), _visits(clicks[35:80])))
            for domain in DOMAINS:
                answers.append([visits_after_the_end(host=domain, slug=f"gone{n}") for n in range(5)])
                page = orphan_visits_page(span=span, domain=domain, offset=5, limit=30)
                answers.append((orphan_visit_counts(span=span, domain=domain), page))
        for bots in (False, True):
            for domain, kind in ((DOMAINS[0], None), (DOMAINS[1], "expired")):
                report = orphan_visits(
                    start=NOW - timedelta(days=60), end=NOW, include_bots=bots, domain=domain, kind=kind, top=4
                )
                answers.append(report)
            everyone = Link.objects.filter(pk__in=pks)
            answers.append(campaign_clicks(everyone, start=NOW - timedelta(days=30), end=NOW, include_bots=bots))
        return answers

    on_postgresql, on_clickhouse = _on("postgresql", [], ask), _on("clickhouse", migrated.urls, ask)
    assert on_postgresql[0][0] > 80 and len(on_postgresql[0][2]) == 45 and on_postgresql[2][0].total > 30
    assert {row.campaign for row in on_postgresql[-1]} == {"spring", "ab", ""}
    reports = [answer for answer in on_postgresql if hasattr(answer, "by_referrer")]
    assert len(reports) == 4 and all(report.visits and report.by_path and report.by_referrer for report in reports)
    assert sum(on_postgresql[1]) > 0  # visits after the end (expired) on the first domain
    for index, (theirs, ours) in enumerate(zip(on_postgresql, on_clickhouse, strict=True)):
        assert ours == theirs, index


def test_after_a_links_visits_are_deleted_both_stores_still_read_the_same(migrated):
    """One link's visits deleted on each store (clicks.services.link_visits_delete:
    PostgreSQL's rows go, the cluster's are hidden, clicks/clickhouse_deletions.py)
    with clicks of the same hour before the deletion and after it: every
    kind of report, the visits one by one, the campaign report and the
    all-time totals still read the same from either store."""
    links = _both_stores(migrated)
    ids = [link.pk for link in links]
    deleted = links[1]
    held = (
        migrated.nodes[0].client().execute("SELECT count() FROM clicks WHERE link_id IN %(ids)s", {"ids": tuple(ids)})
    )
    in_cluster = held[0][0]
    rng = random.Random(8)

    def into_both(clicks: list[dict]) -> int:
        add_entry(clicks, prefix=uuid.uuid4().hex[:16])
        importer("rep-pg").run(once=True)
        add_entry(clicks, prefix=uuid.uuid4().hex[:16])
        _on("clickhouse", migrated.urls, _import_into_clickhouse)
        return sum(1 for click in clicks if click["link"])

    in_cluster += into_both(_clicks(links, 150, rng, between=(NOW, datetime.now(UTC))))
    _on("postgresql", [], lambda: link_visits_delete(link=deleted))
    _on("clickhouse", migrated.urls, lambda: link_visits_delete(link=deleted))
    since = datetime.now(UTC) + timedelta(milliseconds=5)
    time.sleep(1.5)
    later = _clicks(links, 150, rng, between=(since, datetime.now(UTC)))
    in_cluster += into_both(later)
    on_every_replica(migrated, ids, in_cluster)
    try:
        start, end = NOW - timedelta(days=40), NOW + timedelta(hours=2)
        cases = [case for case in CASES if case[0] in ("hour", "week") or case[1] == ZONES[1]]

        def ask():
            answers = []
            for interval, zone, bots, filters in cases:
                answers.append(
                    link_stats(
                        link_ids=ids[:2],
                        start=start,
                        end=end,
                        interval=interval,
                        include_bots=bots,
                        top=None,
                        zone=zone,
                        filters=filters,
                        compare=True,
                        now=NOW,
                    )
                )
            answers.append(link_stats(link_ids=ids, start=NOW - timedelta(days=70), end=end, top=None).breakdowns)
            for span in (VisitsRange(), VisitsRange(start=NOW - timedelta(days=1), include_bots=False)):
                clicks = link_clicks(Link.objects.filter(pk__in=ids[1:]), span)
                answers.append((clicks.count(), _visits(clicks[0:60])))
            answers.append(campaign_clicks(Link.objects.filter(pk__in=ids), start=start, end=end, include_bots=True))
            return answers

        on_postgresql, on_clickhouse = _on("postgresql", [], ask), _on("clickhouse", migrated.urls, ask)
        kept = sum(1 for click in later if click["link"] == deleted.pk)
        assert kept > 10 and on_postgresql[-3][0] > kept  # the deleted link's later clicks, and the third link's
        assert len(cases) == 48 and all(answer.clicks for answer in on_postgresql[:48])
        for index, (theirs, ours) in enumerate(zip(on_postgresql, on_clickhouse, strict=True)):
            assert ours == theirs, (index, cases[index] if index < len(cases) else None)
        # Both importers added the later clicks to the one database's totals; nothing from before the deletion.
        assert link_totals(link_ids=[deleted.pk])[deleted.pk].clicks == 2 * kept
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM clickhouse_deletions")

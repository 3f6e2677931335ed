"""The importer with CLICK_STORE=clickhouse on a real cluster (the
`clickhouse_cluster` fixture: ClickHouse 18.16, two shards of two replicas,
ZooKeeper) and the real Redis and PostgreSQL: the stream's clicks and
orphan visits stored once each, a batch inserted and not acknowledged
stored once whoever reads it again and however, the importer killed under
load and a replica stopped, and the accounting's stored counts read from
the cluster."""

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from clicks import clickhouse_clicks
from clicks.accounting import accounts
from clicks.batch import BatchMaker
from clicks.clickhouse_batches import BATCH_OF, RECORD_PREFIX, BatchRecords
from clicks.clickhouse_import import ClickHouseImporter
from clicks.importer import _Feed
from clicks.reports import link_totals
from clicks.stream import ClickStream
from links.services import link_delete
from slingshot.contract import CLICKS_GROUP as GROUP
from slingshot.contract import CLICKS_STREAM as STREAM
from slingshot.redis import get_redis
from teams.models import Team
from testing.clickhouse import forget_inserted_blocks, on_every_replica
from testing.factories import make_link, make_user
from testing.fixtures import database_url
from testing.streams import ENRICHER, add_entry

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams", "current_engine")]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def cluster(clickhouse_store):
    get_redis().delete(BATCH_OF)
    return clickhouse_store


def ch_importer(consumer: str, **stream_options) -> ClickHouseImporter:
    return ClickHouseImporter(
        stream=ClickStream(get_redis(), consumer=consumer, **stream_options),
        maker=BatchMaker(ENRICHER, visitors_per_click=True),
    )


def click(of, **overrides) -> dict:
    return {
        "ts": int(time.time() * 1000),
        "slug": of.slug if of else None,
        "link": of.pk if of else None,
        "ip": f"198.51.100.{uuid.uuid4().int % 250 + 1}",
        "ua": "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
        "ref": "https://news.example.org/a",
        **overrides,
    }


def orphan(slug: str) -> dict:
    return {**click(None, slug=slug, link=None), "kind": "unknown", "domain": ""}


def stored(cluster, links) -> int:
    """The clicks of these links the cluster holds (asked of the first node, through the Distributed table)."""
    ids = tuple(link.pk for link in links)
    return cluster.nodes[0].client().execute("SELECT count() FROM clicks WHERE link_id IN %(ids)s", {"ids": ids})[0][0]


def all_time(links) -> int:
    """The links' clicks in PostgreSQL's all-time totals, which the links list shows."""
    return sum(totals.clicks for totals in link_totals(link_ids=[link.pk for link in links]).values())


def until(read, expected, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while (got := read()) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return got


@pytest.fixture
def two_links():
    owner = make_user()
    return [make_link(owner=owner, url=f"https://example.org/{n}", slug=f"ch{n}{uuid.uuid4().hex[:8]}") for n in "ab"]


def test_the_streams_clicks_and_orphan_visits_are_stored_in_clickhouse_and_rolled_up(cluster, two_links):
    a, b = two_links
    lost = "nolink" + uuid.uuid4().hex[:8]
    visitor = {"ip": "203.0.113.9", "ua": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Mobile/15E148"}
    add_entry([click(a, rule="2"), click(a, **visitor), click(a, **visitor), click(b), orphan(lost)])
    add_entry([click(b, ua="Googlebot/2.1 (+http://www.google.com/bot.html)") for _ in range(3)])
    start = datetime.now(timezone.utc) - timedelta(minutes=5)

    def accounted() -> int:
        return sum(hour.stored for hour in accounts(client=get_redis(), start=start, end=start + timedelta(hours=1)))

    before = accounted()

    assert ch_importer("ch-plain").run(once=True) == 8
    # Each shard's part is on one replica when the insert answers; the other copies it soon after.
    node = cluster.nodes[0].client()
    assert until(lambda: stored(cluster, two_links), 7) == 7
    orphans = "SELECT kind, domain, is_bot FROM orphan_visits WHERE slug = %(s)s"
    assert until(lambda: node.execute(orphans, {"s": lost}), [("unknown", "", 0)]) == [("unknown", "", 0)]
    rows = node.execute(
        "SELECT link_id, ip, country, browser, is_bot, rule, referer_host, occurred_ms, visitor_hash FROM clicks"
        " WHERE link_id IN %(ids)s ORDER BY link_id, is_bot, rule",
        {"ids": (a.pk, b.pk)},
    )
    assert len(rows) == 7
    assert {row[1] for row in rows if row[0] == a.pk} >= {"203.0.113.0"}  # anonymised, as PostgreSQL keeps it
    assert sorted((row[0], row[4], row[5] or "") for row in rows) == [
        *[(a.pk, 0, "")] * 2,
        (a.pk, 0, "2"),
        (b.pk, 0, ""),
        *[(b.pk, 1, "")] * 3,
    ]
    assert {row[6] for row in rows} == {"news.example.org"} and all(0 <= row[7] < 1000 for row in rows)
    assert len({row[8] for row in rows if row[0] == a.pk}) == 2  # the same visitor twice, and another
    rollup = """SELECT link_id, is_bot, countMerge(clicks), uniqCombinedMerge(visitors) FROM click_rollup_hour
        WHERE link_id IN %(ids)s GROUP BY link_id, is_bot ORDER BY link_id, is_bot"""
    expected = [(a.pk, 0, 3, 2), (b.pk, 0, 1, 1), (b.pk, 1, 3, 1)]
    assert until(lambda: node.execute(rollup, {"ids": (a.pk, b.pk)}), expected) == expected
    assert until(lambda: accounted() - before, 8) == 8
    assert not get_redis().hlen(BATCH_OF)  # every record forgotten with its acknowledgement


def _read_two_batches_and_insert_the_first(consumer: str, links, *, entries: int = 6) -> int:
    """As an importer that read a batch and the next (read ahead), inserted
    the first and died before acknowledging it. Returns the clicks added."""
    for n in range(entries):
        add_entry([click(links[n % 2]) for _ in range(n + 1)])
    dying = ch_importer(consumer, batch_size=entries // 2)
    dying.stream.ensure_group()
    first = get_redis().xreadgroup(GROUP, consumer, {STREAM: ">"}, count=entries // 2)[0][1]
    get_redis().xreadgroup(GROUP, consumer, {STREAM: ">"}, count=entries // 2)  # read ahead: pending too
    _, batch, _ = dying.batch_of(first)
    assert dying.store(batch) == sum(range(1, entries // 2 + 1))
    return sum(range(1, entries + 1))


def test_a_batch_inserted_and_not_acknowledged_is_made_again_from_its_own_entries(cluster, two_links):
    added = _read_two_batches_and_insert_the_first("ch-restart", two_links)
    assert get_redis().xpending(STREAM, GROUP)["pending"] == 6
    # Started again with a larger batch size, it reads its six pending
    # entries at once: the three of the recorded batch are cut out of them.
    again = ch_importer("ch-restart", batch_size=100)
    assert again.run(once=True) == added
    assert until(lambda: stored(cluster, two_links), added) == added
    assert all_time(two_links) == added  # the first batch's clicks counted once too
    assert not get_redis().keys(RECORD_PREFIX + "*") and not get_redis().hlen(BATCH_OF)


def test_a_batch_made_again_after_its_shards_forgot_its_blocks_is_stored_once(cluster, two_links):
    """Deduplication remembers a shard's latest 100 blocks (18.16's
    replicated_deduplication_window): an importer that comes back later
    than that, the other importers having stored more, must not store its
    recorded batch again; the rows the cluster holds are left out."""
    added = _read_two_batches_and_insert_the_first("ch-late", two_links)
    first = sum(range(1, 4))
    assert until(lambda: stored(cluster, two_links), first) == first
    forget_inserted_blocks(cluster)
    again = ch_importer("ch-late", batch_size=100)
    assert again.run(once=True) == added
    ids = {"ids": tuple(link.pk for link in two_links)}

    def on_every_replica() -> int:
        local = "SELECT count() FROM clicks_local WHERE link_id IN %(ids)s"
        return sum(node.client().execute(local, ids)[0][0] for node in cluster.nodes)

    assert until(on_every_replica, 2 * added) == 2 * added
    time.sleep(1)  # what a copy sent twice would need to reach the other replica
    assert on_every_replica() == 2 * added
    assert all_time(two_links) == added


def test_a_dead_importers_recorded_batch_is_claimed_whole_even_from_its_middle(cluster, two_links):
    added = _read_two_batches_and_insert_the_first("ch-dead", two_links)
    pending = [row["message_id"] for row in get_redis().xpending_range(STREAM, GROUP, "-", "+", 10, "ch-dead")]
    time.sleep(0.05)
    # Another importer takes the dead one's entries over, one entry a claim,
    # and its first claim starts at the recorded batch's second entry.
    survivor = ch_importer("ch-survivor", batch_size=1, claim_idle_ms=10)
    survivor.stream.ensure_group()
    feed = _Feed(survivor, once=False)
    feed.start, feed.next_claim, feed.claim_cursor = ">", 0.0, pending[1].decode()
    entries, batch = feed.next()
    assert [entry_id for entry_id, _ in entries] == pending[:3] and batch.recorded
    survivor.process(entries, batch)
    # Then what the dead one had read ahead, claimed once idle.
    deadline = time.monotonic() + 20
    while get_redis().xpending(STREAM, GROUP)["pending"]:
        assert time.monotonic() < deadline, get_redis().xpending(STREAM, GROUP)
        feed.next_claim = 0.0
        entries, batch = feed.next()
        if entries:
            survivor.process(entries, batch)
    assert until(lambda: stored(cluster, two_links), added) == added
    assert all_time(two_links) == added


def test_a_batch_made_again_keeps_the_address_as_it_was_stored_though_its_team_chose_since(cluster, two_links):
    a, _ = two_links
    add_entry([click(a, ip="203.0.113.77") for _ in range(4)])
    dying = ch_importer("ch-choice")
    dying.stream.ensure_group()
    entries = get_redis().xreadgroup(GROUP, "ch-choice", {STREAM: ">"})[0][1]
    _, batch, _ = dying.batch_of(entries)
    dying.store(batch)
    Team.objects.filter(pk=a.team_id).update(ip_storage="full")
    assert ch_importer("ch-choice").run(once=True) == 4
    assert until(lambda: stored(cluster, [a]), 4) == 4 and all_time([a]) == 4

    def addresses():
        return cluster.nodes[0].client().execute("SELECT DISTINCT ip FROM clicks WHERE link_id = %(l)s", {"l": a.pk})

    assert until(addresses, [("203.0.113.0",)]) == [("203.0.113.0",)]
    # The next batch is made as the team chose now.
    add_entry([click(a, ip="203.0.113.77")])
    ch_importer("ch-choice").run(once=True)
    assert until(lambda: stored(cluster, [a]), 5) == 5 and all_time([a]) == 5
    both = [("203.0.113.0",), ("203.0.113.77",)]
    assert until(lambda: sorted(addresses()), both) == both


def _importer_process(cluster, consumer: str, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CLICK_STORE": "clickhouse",
        "CLICKHOUSE_URLS": ",".join(cluster.urls),
    }
    return subprocess.Popen(
        [
            sys.executable,
            str(REPO / "dashboard" / "manage.py"),
            "import_clicks",
            "--consumer",
            consumer,
            "--batch-size",
            "5",
            "--linger-ms",
            "0",
            "--block-ms",
            "100",
        ],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


class Load:
    """Entries of the links' clicks added to the stream until stopped, from a thread; `added` clicks so far."""

    def __init__(self, links, *, most: int, pause: float):
        self.links, self.most, self.pause = links, most, pause
        self.added, self._stop = 0, threading.Event()
        self._writer = threading.Thread(target=self._run)

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            batch = [click(self.links[n % 2]) for _ in range(1 + n % self.most)]
            add_entry(batch)
            self.added += len(batch)
            time.sleep(self.pause)

    def start(self) -> "Load":
        self._writer.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._writer.join()


def _drained_and_each_click_once(
    cluster, importer, log: Path, links, added: int, *, drain: float, settle: float
) -> None:
    """Once `importer` has drained the stream: every click added stored once, and counted once."""
    try:
        deadline = time.monotonic() + drain
        while get_redis().xlen(STREAM) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not get_redis().xlen(STREAM), log.read_text()[-3000:]
    finally:
        importer.terminate()
        importer.wait(timeout=30)
    assert until(lambda: stored(cluster, links), added, timeout=settle) == added
    query = "SELECT count(), uniqExact(click_id) FROM clicks WHERE link_id IN %(ids)s"
    counts = cluster.nodes[0].client().execute(query, {"ids": tuple(link.pk for link in links)})
    assert counts == [(added, added)] and all_time(links) == added


@pytest.mark.slow
def test_the_importer_killed_under_load_and_a_replica_stopped_lose_and_double_nothing(cluster, two_links, tmp_path):
    """Entries keep coming while the importer is killed (SIGKILL) again and
    again, at whatever point of a batch, and one replica of a shard is
    stopped for a while: once it has caught up, every click is stored once."""
    log = tmp_path / "importer.log"
    load = Load(two_links, most=7, pause=0.005).start()
    replica = cluster.nodes[0]  # the node the importer asks first, a replica of shard 1
    try:
        for round in range(6):
            process = _importer_process(cluster, "ch-killed", log)
            time.sleep(1.0 + round * 0.3)
            if round == 2:
                cluster.stop_node(replica)
            if round == 4:
                cluster.start_node(replica)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
    finally:
        load.stop()
        if replica.process is None or replica.process.poll() is not None:
            cluster.start_node(replica)
    final = _importer_process(cluster, "ch-killed", log)
    _drained_and_each_click_once(cluster, final, log, two_links, load.added, drain=120, settle=30)


def test_a_deleted_links_clicks_stay_in_the_cluster_and_counted_stored(cluster, two_links):
    """A link deleted keeps its clicks in the cluster, where no report asks
    for them, and the accounting counts them as stored, as the edges served
    them (deleting a link's visits is clicks/tests/test_clickhouse_deletions.py)."""
    a, b = two_links
    add_entry([click(a) for _ in range(5)] + [click(b) for _ in range(3)])
    assert ch_importer("ch-deleting").run(once=True) == 8
    start = datetime.now(timezone.utc) - timedelta(minutes=5)

    def account() -> tuple[int, int]:
        hours = accounts(client=get_redis(), start=start, end=start + timedelta(hours=1))
        return sum(hour.stored for hour in hours), sum(hour.deleted for hour in hours)

    assert until(lambda: stored(cluster, two_links), 8) == 8
    on_every_replica(cluster, [a.pk, b.pk], 8)
    before = account()
    kept = [b.pk]
    link_delete(link=b)
    query = "SELECT count() FROM clicks WHERE link_id IN %(ids)s"
    assert cluster.nodes[0].client().execute(query, {"ids": tuple(kept)})[0][0] == 3 and account() == before


@pytest.mark.slow
def test_zookeeper_restarted_and_a_shard_away_for_a_minute_under_load_lose_and_double_nothing(
    cluster, two_links, tmp_path
):
    """One importer follows the stream while entries keep coming; ZooKeeper
    is stopped for a few seconds and started again (the replicated tables
    are read-only meanwhile), then both replicas of the second shard are
    stopped for a minute. The importer waits and goes on: once it has
    caught up, every click is stored once."""
    log = tmp_path / "importer.log"
    importer = _importer_process(cluster, "ch-faults", log)
    load = Load(two_links, most=5, pause=0.05).start()
    second_shard = [node for node in cluster.nodes if node.shard == 2]
    try:
        time.sleep(1.5)
        cluster.stop_zookeeper()
        time.sleep(4)
        cluster.start_zookeeper()
        time.sleep(2)
        for node in second_shard:
            cluster.stop_node(node)
        time.sleep(60)
        assert importer.poll() is None and load.added > 1000  # it waited, and the clicks kept coming
        for node in second_shard:
            cluster.start_node(node, wait=False)
        time.sleep(1.5)
    finally:
        load.stop()
        if cluster.zookeeper.poll() is not None:
            cluster.start_zookeeper()
        for node in second_shard:
            if node.process.poll() is not None:
                cluster.start_node(node, wait=False)
        for node in cluster.nodes:
            cluster.wait_for_node(node)
    _drained_and_each_click_once(cluster, importer, log, two_links, load.added, drain=180, settle=60)
    assert "retrying in" in log.read_text(), "the faults never reached the importer"


def test_a_mapping_left_behind_is_let_go_and_a_recorded_batch_read_with_it_still_found():
    client = get_redis()
    client.delete(BATCH_OF)
    records = BatchRecords(client)
    gone = [(b"1-0", {}), (b"1-1", {})]  # a batch acknowledged, its entries' mapping left
    client.hset(BATCH_OF, mapping={b"1-0": b"1-0", b"1-1": b"1-0"})
    kept = [(b"2-0", {}), (b"2-1", {})]
    records.record(SimpleNamespace(entries=kept, made_at=datetime.now(timezone.utc), ip_storage={7: 1}))
    first, record = records.find(gone + kept)
    assert (first, record["ids"], record["ip_storage"]) == ("2-0", ["2-0", "2-1"], {"7": 1})
    assert sorted(client.hkeys(BATCH_OF)) == [b"2-0", b"2-1"]
    client.delete(BATCH_OF, RECORD_PREFIX + "2-0")


def test_an_importer_of_this_version_waits_for_migrate_clicks_and_then_stores_each_click_once(two_links, settings):
    """Upgraded in the wrong order: the importer of this version meets a
    cluster at the schema before 0002_breakdowns, whose clicks have no
    in_breakdowns. Its insert is refused (import_clicks retries such an
    error), nothing is stored or counted, and its batch is kept; once
    migrate_clicks ran, the same batch goes in once, into the breakdowns too."""
    from clickhouse_driver.errors import ServerException

    from clicks.clickhouse_reports import ClickHouseReport
    from clicks.clickhouse_schema import migrate, migrations
    from devstack.clickhouse import ClickHouseCluster

    older = ClickHouseCluster(shards=1, replicas=2, cluster="older").start()
    try:
        clients = {node.name: node.client() for node in older.nodes}
        migrate(clients, cluster="older", known=migrations()[:1])
        settings.CLICK_STORE, settings.CLICKHOUSE_URLS, settings.CLICKHOUSE_CLUSTER = "clickhouse", older.urls, "older"
        clickhouse_clicks.forget_cluster()
        get_redis().delete(BATCH_OF)
        a, b = two_links
        add_entry([click(a) for _ in range(5)] + [click(b) for _ in range(3)])
        with pytest.raises(ServerException, match="in_breakdowns"):
            ch_importer("ch-older").run(once=True)
        assert stored(older, two_links) == 0 and all_time(two_links) == 0
        assert get_redis().xpending(STREAM, GROUP)["pending"] == 1

        migrate(clients, cluster="older")
        assert ch_importer("ch-older").run(once=True) == 8
        assert stored(older, two_links) == 8 and all_time(two_links) == 8
        now = datetime.now(timezone.utc)
        report = ClickHouseReport(ids=[a.pk, b.pk], include_bots=True, zone=timezone.utc)
        month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        whole = report.breakdowns(month - timedelta(days=40), month + timedelta(days=40), None)
        assert whole["browser"] == [("Firefox", 8)] and whole["referer_host"] == [("news.example.org", 8)]
    finally:
        clickhouse_clicks.forget_cluster()
        older.cleanup()

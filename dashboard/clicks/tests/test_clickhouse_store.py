"""The ClickHouse click store on a real cluster (the `clickhouse_cluster`
fixture: ClickHouse 18.16, two shards of two replicas, and ZooKeeper):
migrate_clicks, where an insert through the Distributed table lands, that
a batch inserted again is stored, and rolled up, once, and that the clicks
stored before the breakdown rollup (sql/clickhouse/0002) are counted once,
and that threads read it each on its own connection."""

import random
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from io import StringIO
from itertools import product

import pytest
from django.core.management import CommandError, call_command

from clicks import clickhouse_clicks
from clicks.clickhouse_clicks import CLICK_COLUMNS
from clicks.clickhouse_deletions import Hidden
from clicks.clickhouse_reports import ClickHouseReport
from clicks.clickhouse_schema import migrate, migrations
from devstack.clickhouse import ClickHouseCluster

HOUR = datetime(2026, 11, 29, 14, tzinfo=UTC)
# Link ids of this file alone, far above any a test database gives, each
# with the parity that picks its shard: the session's cluster is shared.
BASE = 10**12
COLUMNS = ", ".join(CLICK_COLUMNS)


@pytest.fixture(scope="module")
def cluster(clickhouse_cluster):
    call_command("migrate_clicks", *_url_args(clickhouse_cluster), stdout=StringIO())
    return clickhouse_cluster


def _url_args(cluster) -> list[str]:
    return [arg for url in cluster.urls for arg in ("--url", url)]


def _migrate(cluster) -> str:
    out = StringIO()
    call_command("migrate_clicks", *_url_args(cluster), stdout=out)
    return out.getvalue()


def _click(link_id: int, n: int, *, is_bot: bool = False, visitor: int = 0) -> tuple:
    at = HOUR + timedelta(seconds=n)
    return (
        uuid.UUID(int=(link_id << 64) | n),
        at,
        n % 1000,
        link_id,
        7,
        int(is_bot),
        f"s{link_id}",
        "203.0.113.0",
        "NL",
        "Firefox",
        "Linux",
        "bot" if is_bot else "desktop",
        "",
        "",
        None,
        None,
        visitor,
        1,
    )


def _block(rows: list[tuple]) -> list[tuple]:
    """A batch in one order whatever order its rows came in: the order of
    the table's sort key, then the click id (which a click has once)."""
    return sorted(rows, key=lambda row: (row[3], row[1], row[2], row[0]))


def _insert(cluster, rows: list[tuple]) -> None:
    client = cluster.nodes[0].client(insert_distributed_sync=1)
    client.execute(f"INSERT INTO clicks ({COLUMNS}) VALUES", _block(rows))


def _until(read, expected, *, timeout: float = 20.0):
    """What `read()` returns once it equals `expected` (replication is
    asynchronous), or its last answer after the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        got = read()
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def _local_count(node, link_id: int) -> int:
    return node.client().execute("SELECT count() FROM clicks_local WHERE link_id = %(l)s", {"l": link_id})[0][0]


def _versions(node) -> list[tuple]:
    return node.client().execute("SELECT version, name FROM click_schema_migrations ORDER BY version")


def test_migrate_clicks_records_every_file_on_every_node_and_a_second_run_is_a_no_op(cluster):
    expected = [(migration.version, migration.name) for migration in migrations()]
    assert expected and expected[0] == (1, "0001_clicks")
    assert [_versions(node) for node in cluster.nodes] == [expected] * 4
    tables = cluster.nodes[3].client().execute("SELECT name FROM system.tables WHERE database = currentDatabase()")
    assert {"clicks", "clicks_local", "orphan_visits", "click_rollup_hour", "click_rollup_hour_mv"} <= {
        name for (name,) in tables
    }

    assert "up to date on 4 ClickHouse nodes" in _migrate(cluster)
    assert [_versions(node) for node in cluster.nodes] == [expected] * 4


def test_migrate_clicks_refuses_a_node_ahead_of_the_code_or_nodes_that_disagree(cluster):
    newest = migrations()[-1].version
    node = cluster.nodes[2]
    client = node.client()
    try:
        client.execute("INSERT INTO click_schema_migrations VALUES", [(newest + 1, "9999_future", datetime.now(UTC))])
        with pytest.raises(
            CommandError, match=rf"newer than this code's \(version {newest}\): 127.0.0.1:{node.tcp_port}"
        ):
            _migrate(cluster)
    finally:
        client.execute("ALTER TABLE click_schema_migrations DELETE WHERE version > %(v)s", {"v": newest})
    assert _until(lambda: _versions(node)[-1][0], newest) == newest

    behind = cluster.nodes[1]
    behind.client().execute("TRUNCATE TABLE click_schema_migrations")
    try:
        with pytest.raises(CommandError, match=f"disagree on the schema version: .*127.0.0.1:{behind.tcp_port} at 0"):
            _migrate(cluster)
    finally:
        behind.client().execute(
            "INSERT INTO click_schema_migrations VALUES",
            [(m.version, m.name, datetime.now(UTC)) for m in migrations()],
        )
    assert "up to date" in _migrate(cluster)


def test_migrate_clicks_without_a_node_says_so():
    with pytest.raises(CommandError, match="set CLICKHOUSE_URLS"):
        call_command("migrate_clicks", stdout=StringIO())
    with pytest.raises(CommandError, match="not a clickhouse:// URL"):
        call_command("migrate_clicks", "--url", "http://127.0.0.1:1", stdout=StringIO())
    with pytest.raises(CommandError, match="a ClickHouse node did not answer"):
        call_command("migrate_clicks", "--url", "clickhouse://default@127.0.0.1:1/default", stdout=StringIO())


def test_an_insert_through_the_distributed_table_lands_on_its_links_shard_and_is_replicated(cluster):
    # Sharded by link_id over two shards of weight 1: an even link on the
    # first shard, an odd one on the second.
    _insert(cluster, [_click(BASE + 1000, n) for n in range(5)] + [_click(BASE + 1001, n) for n in range(3)])
    first, second = cluster.nodes[:2], cluster.nodes[2:]
    for node in first:
        assert _until(lambda node=node: _local_count(node, BASE + 1000), 5) == 5
        assert _local_count(node, BASE + 1001) == 0
    for node in second:
        assert _until(lambda node=node: _local_count(node, BASE + 1001), 3) == 3
        assert _local_count(node, BASE + 1000) == 0
    total = (
        cluster.nodes[1]
        .client()
        .execute("SELECT count() FROM clicks WHERE link_id IN %(ids)s", {"ids": (BASE + 1000, BASE + 1001)})
    )
    assert total == [(8,)]


def _rollup(cluster, link_id: int) -> list[tuple]:
    return (
        cluster.nodes[3]
        .client()
        .execute(
            "SELECT bucket, is_bot, countMerge(clicks), uniqCombinedMerge(visitors) FROM click_rollup_hour"
            " WHERE link_id = %(l)s GROUP BY bucket, is_bot ORDER BY bucket, is_bot",
            {"l": link_id},
        )
    )


def _breakdowns(cluster, link_id: int) -> dict[tuple, int]:
    rows = (
        cluster.nodes[-1]
        .client()
        .execute(
            "SELECT is_bot, dimension, value, sum(clicks) FROM click_breakdown_month"
            " WHERE link_id = %(l)s GROUP BY is_bot, dimension, value",
            {"l": link_id},
        )
    )
    return {(is_bot, dimension, value): n for is_bot, dimension, value, n in rows}


def _stored(cluster, link_id: int) -> int:
    return cluster.nodes[0].client().execute("SELECT count() FROM clicks WHERE link_id = %(l)s", {"l": link_id})[0][0]


def test_a_batch_inserted_again_in_another_order_is_stored_and_rolled_up_once(cluster):
    rows = [_click(BASE + 2000, n, visitor=n % 4) for n in range(40)] + [
        _click(BASE + 2000, 100 + n, is_bot=True, visitor=99) for n in range(6)
    ]
    rows += [_click(BASE + 2003, n, visitor=n) for n in range(10)]
    _insert(cluster, rows)
    expected = [(HOUR, 0, 40, 4), (HOUR, 1, 6, 1)]
    assert _until(lambda: _rollup(cluster, BASE + 2000), expected) == expected

    again = list(rows)
    random.Random(52).shuffle(again)
    assert again != rows
    _insert(cluster, again)  # as after a crash between the insert and the stream's acknowledgement
    _insert(cluster, list(reversed(rows)))
    time.sleep(1)  # what replication would bring, had the block been stored again
    for node in cluster.nodes[:2]:
        assert _local_count(node, BASE + 2000) == 46
    assert _stored(cluster, BASE + 2000) == 46 and _stored(cluster, BASE + 2003) == 10
    assert _rollup(cluster, BASE + 2000) == expected
    assert _rollup(cluster, BASE + 2003) == [(HOUR, 0, 10, 10)]
    # Each click in each dimension of the breakdowns once; no rule served these.
    humans = {"referer_host": "", "browser": "Firefox", "os": "Linux", "device": "desktop", "country": "NL"}
    expected_breakdowns = {(0, dimension, value): 40 for dimension, value in humans.items()}
    expected_breakdowns |= {(1, dimension, value): 6 for dimension, value in {**humans, "device": "bot"}.items()}
    assert _breakdowns(cluster, BASE + 2000) == expected_breakdowns

    # One row more is another block: stored, and counted, as it should be.
    _insert(cluster, rows + [_click(BASE + 2000, 200, visitor=5)])
    assert _until(lambda: _stored(cluster, BASE + 2000), 46 + 47) == 46 + 47
    expected = [(HOUR, 0, 81, 5), (HOUR, 1, 12, 1)]  # visitors 0-3 and 5; 99
    assert _until(lambda: _rollup(cluster, BASE + 2000), expected) == expected


def test_orphan_visits_land_on_the_shard_of_their_slug_and_are_replicated(cluster):
    client = cluster.nodes[3].client(insert_distributed_sync=1)
    slug = f"gone-{uuid.uuid4().hex[:8]}"  # the session's cluster holds other tests' orphan visits
    visit = (uuid.uuid4(), HOUR, 0, 0, slug, None, "NL", "curl/8", "", "expired", "", None)
    client.execute(
        "INSERT INTO orphan_visits (click_id, occurred_at, occurred_ms, is_bot, slug, ip, country, user_agent,"
        " referer, kind, domain, import_id) VALUES",
        [visit],
    )
    (shard,) = client.execute("SELECT modulo(sipHash64(%(slug)s), 2) + 1", {"slug": slug})[0]

    def held(node) -> list:
        return node.client().execute("SELECT slug, kind FROM orphan_visits_local WHERE slug = %(slug)s", {"slug": slug})

    for node in cluster.nodes:
        expected = [(slug, "expired")] if node.shard == shard else []
        assert _until(lambda node=node: held(node), expected) == expected


def test_the_clicks_stored_before_the_breakdown_rollup_are_counted_from_the_raw_clicks_each_click_once(settings):
    """An installation upgraded to 0002_breakdowns: the clicks its cluster
    held, inserted as the code before wrote them (without in_breakdowns),
    and those an older importer still sends while the new one runs, read
    the column's default 0 and are counted from the raw clicks; the new
    importer's (1) from the breakdown rollup; the breakdowns add each click
    once, and say what the clicks say."""
    upgraded = ClickHouseCluster(shards=1, replicas=2, cluster="upgraded").start()
    try:
        clients = {node.name: node.client() for node in upgraded.nodes}
        assert [m.name for m in migrate(clients, cluster="upgraded", known=migrations()[:1])] == ["0001_clicks"]
        link = BASE + 4000
        old_columns = ", ".join(column for column in CLICK_COLUMNS if column != "in_breakdowns")
        writer = upgraded.nodes[0].client(insert_distributed_sync=1)

        def insert(rows, *, old: bool) -> None:
            rows = _block(rows)
            if old:
                writer.execute(f"INSERT INTO clicks ({old_columns}) VALUES", [row[:-1] for row in rows])
            else:
                writer.execute(f"INSERT INTO clicks ({COLUMNS}) VALUES", rows)

        def with_browser(row: tuple, browser: str, rule: str | None = None) -> tuple:
            return row[:9] + (browser,) + row[10:14] + (rule,) + row[15:]

        insert([with_browser(_click(link, n), "Firefox", "1") for n in range(7)], old=True)
        assert [m.name for m in migrate(clients, cluster="upgraded")] == [m.name for m in migrations()[1:]]
        assert migrate(clients, cluster="upgraded") == []  # applied again: nothing to do
        insert([with_browser(_click(link, 10 + n), "Safari") for n in range(5)], old=True)  # an older importer
        new = [with_browser(_click(link, 20 + n), "Firefox") for n in range(4)]
        new += [with_browser(_click(link, 30 + n, is_bot=True), "Googlebot", "2") for n in range(3)]
        insert(new, old=False)
        insert(list(reversed(new)), old=False)  # sent again after a crash: dropped whole

        settings.CLICK_STORE, settings.CLICKHOUSE_URLS = "clickhouse", upgraded.urls
        settings.CLICKHOUSE_CLUSTER = "upgraded"
        clickhouse_clicks.forget_cluster()
        try:
            expected = {
                "browser": [("Firefox", 11), ("Safari", 5)],
                "country": [("NL", 16)],
                "device": [("desktop", 16)],
                "os": [("Linux", 16)],
                "referer_host": [("", 16)],
                "rule": [("1", 7)],
            }
            with_bots = {**expected, "browser": [("Firefox", 11), ("Safari", 5), ("Googlebot", 3)]}
            with_bots |= {"device": [("desktop", 16), ("bot", 3)], "rule": [("1", 7), ("2", 3)]}
            with_bots |= {dimension: [(value, 19)] for dimension, value in (("country", "NL"), ("os", "Linux"))}
            with_bots["referer_host"] = [("", 19)]
            month = HOUR.replace(day=1, hour=0)
            ranges = [
                (month, month.replace(month=month.month + 1)),  # one whole month: the rollup, and raw the rest
                (month - timedelta(days=3), HOUR + timedelta(hours=1)),  # no whole month: the raw clicks alone
            ]
            for (start, end), (include_bots, counts) in product(ranges, ((False, expected), (True, with_bots))):
                report = ClickHouseReport(ids=[link], include_bots=include_bots, zone=UTC, hidden=Hidden())
                found = _until(lambda r=report, s=start, e=end: r.breakdowns(s, e, None), counts, timeout=10)
                assert found == counts, (start, end, include_bots)
            # The new importer's clicks alone are in the rollup: the reports add the rest.
            # _breakdowns reads on the last replica, which may not have fetched the rollup's part yet.
            alone = {(0, "browser", "Firefox"): 4, (1, "browser", "Googlebot"): 3, (1, "rule", "2"): 3}
            rolled = _until(
                lambda: {key: n for key, n in _breakdowns(upgraded, link).items() if key[1] in ("browser", "rule")},
                alone,
            )
            assert rolled == alone
        finally:
            clickhouse_clicks.forget_cluster()
    finally:
        upgraded.cleanup()


def test_threads_each_read_the_cluster_on_their_own_connection(cluster, settings):
    """A dashboard served with threads (`gunicorn --threads`) reads the
    cluster from several threads at once: each has its own connection, and
    each statement its own answer. One connection shared, clickhouse_driver
    refuses a statement sent while another's answer is being read."""
    settings.CLICK_STORE, settings.CLICKHOUSE_URLS = "clickhouse", cluster.urls
    clickhouse_clicks.forget_cluster()
    start = threading.Barrier(4)

    def ask(n: int) -> list[int]:
        start.wait()
        try:
            return [
                clickhouse_clicks.cluster().execute(f"SELECT sum(number) + {n} FROM numbers(300000)")[0][0]
                for _ in range(15)
            ]
        finally:
            clickhouse_clicks.forget_cluster()

    try:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, range(4)))
        assert answers == [[sum(range(300000)) + n] * 15 for n in range(4)]
        assert clickhouse_clicks.cluster() is clickhouse_clicks.cluster()  # one per thread, kept
    finally:
        clickhouse_clicks.forget_cluster()

"""Helpers for the tests of the ClickHouse click store on the tests' real
cluster (devstack/clickhouse.py)."""

import time
import uuid
from datetime import UTC, datetime

# Inserted blocks a shard's replicated table remembers for deduplication:
# 18.16's replicated_deduplication_window.
DEDUPLICATION_WINDOW = 100
_BLOCKS = "SELECT count() FROM system.zookeeper WHERE path = %(path)s"
_PATH = "/clickhouse/tables/{shard}/slingshot/{table}/blocks"
# Far from any test's time, and imported: no report or accounting of a test counts them.
_LONG_AGO = datetime(2001, 1, 1, tzinfo=UTC)


def forget_inserted_blocks(cluster) -> None:
    """More blocks into each shard's clicks_local and orphan_visits_local
    than deduplication remembers, as importers that went on storing would
    insert, and back once every shard has forgotten the ones before them
    (the cluster's cleanup_delay_period is a second)."""
    first_of_shard = {}
    for node in cluster.nodes:
        first_of_shard.setdefault(node.shard, node)
    for shard, node in first_of_shard.items():
        client = node.client()
        for n in range(DEDUPLICATION_WINDOW + 10):
            at = _LONG_AGO.replace(tzinfo=None)
            client.execute(
                "INSERT INTO clicks_local (click_id, occurred_at, occurred_ms, link_id, slug, country, browser,"
                " os, device, referer, referer_host, import_id) VALUES",
                [(uuid.uuid4(), at, n, -shard, "flood", "", "", "", "", "", "", -1)],
            )
            client.execute(
                "INSERT INTO orphan_visits_local (click_id, occurred_at, occurred_ms, slug, country, user_agent,"
                " referer, kind, domain, import_id) VALUES",
                [(uuid.uuid4(), at, n, f"flood-{shard}", "", "", "", "unknown", "", -1)],
            )
    deadline = time.monotonic() + 30
    for shard, node in first_of_shard.items():
        for table in ("clicks_local", "orphan_visits_local"):
            path = _PATH.format(shard=shard, table=table)
            while node.client().execute(_BLOCKS, {"path": path})[0][0] > DEDUPLICATION_WINDOW:
                assert time.monotonic() < deadline, f"shard {shard}'s {table} did not forget its older blocks"
                time.sleep(0.2)


def on_every_replica(cluster, ids: list[int], clicks: int) -> None:
    """Waits until every replica holds the links' `clicks` clicks, once
    each: a read through the Distributed table may ask either."""
    local = "SELECT count() FROM clicks_local WHERE link_id IN %(ids)s"
    deadline = time.monotonic() + 30
    while sum(node.client().execute(local, {"ids": tuple(ids)})[0][0] for node in cluster.nodes) != 2 * clicks:
        assert time.monotonic() < deadline, "the cluster did not get every click on both replicas"
        time.sleep(0.2)


def replicas_caught_up(cluster) -> None:
    """Every node's replicated tables with all their shard's parts: a read
    through a Distributed table asks one replica of each shard, any that
    is less than max_replica_delay_for_distributed_queries behind, so two
    reads in a row can count differently while a replica catches up (one
    stopped and started again by a test before)."""
    for node in cluster.nodes:
        client = node.client()
        for (table,) in client.execute("SELECT table FROM system.replicas WHERE database = currentDatabase()"):
            client.execute(f"SYSTEM SYNC REPLICA {table}")

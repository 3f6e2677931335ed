"""`make bench-import CLICK_STORE=clickhouse`: bench_import.py's run with
ClickHouse as the click store. The same preloaded stream (the edge's
format, the same links, agents, addresses and orphan visits), drained by
`ClickHouseImporter` as `import_clicks` runs it (BatchMaker with a visitor
hash a click) into a throwaway cluster of two shards of two replicas and
its ZooKeeper (devstack/clickhouse.py, 18.16), migrated by
`manage.py migrate_clicks`; links, user agents and the links' all-time
totals stay in the throwaway PostgreSQL.

Prints the figures bench_import.py prints for PostgreSQL, so that the two
read side by side: clicks/s whole and sustained, and the CPU seconds of
each program summed over its processes (the importer; the ClickHouse
servers; ZooKeeper; PostgreSQL; Redis) and a click. The CPU is counted
until every replica has fetched what its shard's other replica took
(replication is part of a click's cost), which the line says."""

import cProfile
import os
import pstats
import time

from bench_import import RUNS, describe_load, make_links, preload_stream
from bench_import_meters import Commits, CpuMeter
from procstat import cpu_seconds

from devstack.clickhouse import ClickHouseCluster
from devstack.throwaway import ThrowawayStack

SETTLE_TIMEOUT = 300.0  # seconds to wait for the replicas to catch up


class ClusterCpuMeter(CpuMeter):
    """CpuMeter's PostgreSQL, Redis and importer, and the cluster's nodes and ZooKeeper."""

    def __init__(self, stack: ThrowawayStack, cluster: ClickHouseCluster):
        super().__init__(stack)
        self.cluster = cluster

    def _sample(self) -> dict[str, float]:
        return {
            **super()._sample(),
            "clickhouse": cpu_seconds([node.process.pid for node in self.cluster.nodes]),
            "zookeeper": cpu_seconds([self.cluster.zookeeper.pid]),
        }


def stored_counts() -> tuple[int, int]:
    """Clicks and orphan visits in the cluster, and the clicks its hourly rollup counts."""
    from clicks.clickhouse_clicks import cluster

    ((rows,),) = cluster().execute("SELECT (SELECT count() FROM clicks) + (SELECT count() FROM orphan_visits)")
    ((rolled_up,),) = cluster().execute("SELECT countMerge(clicks) FROM click_rollup_hour")
    return rows, rolled_up


def settle(cluster: ClickHouseCluster, *, timeout: float = SETTLE_TIMEOUT) -> float:
    """Waits until no node has replication work queued (every replica has
    every part of its shard); the seconds it took."""
    started = time.perf_counter()
    while True:
        queued = sum(
            node.client().execute("SELECT count() FROM system.replication_queue")[0][0] for node in cluster.nodes
        )
        if not queued:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"{queued} replication tasks still queued after {timeout:.0f}s")
        time.sleep(0.2)


def run_clickhouse(args, stack: ThrowawayStack) -> None:
    cluster = ClickHouseCluster(shards=2, replicas=2)
    try:
        cluster.start()
        os.environ.update({"CLICK_STORE": "clickhouse", "CLICKHOUSE_URLS": ",".join(cluster.urls)})
        import django

        django.setup()
        _run(args, stack, cluster)
    finally:
        cluster.cleanup()


def _run(args, stack: ThrowawayStack, cluster: ClickHouseCluster) -> None:
    """The plain and the enriched import into the cluster, one after the other."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from clicks.importer import tune_gc
    from slingshot.redis import get_redis

    call_command("migrate", verbosity=0)
    call_command("migrate_clicks", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    args.batch_size = args.batch_size or settings.CLICK_IMPORT_BATCH_ENTRIES
    tune_gc()
    _, links = make_links(args)
    client = get_redis()
    version = cluster.nodes[0].client().execute("SELECT version()")[0][0]
    print(
        f"bench-import, CLICK_STORE=clickhouse: {describe_load(args)}, "
        f"ClickHouse {version} 2 shards x 2 replicas + ZooKeeper, "
        "PostgreSQL (links, user agents, totals) fsync on, Redis appendonly"
    )
    for seed, (name, enabled) in enumerate(RUNS):
        if args.only and args.only != name:
            continue
        preload_stream(client, args, links, seed=seed)
        import_once(args, stack, cluster, client, name=name, enabled=enabled)
    connection.close()


def import_once(args, stack: ThrowawayStack, cluster: ClickHouseCluster, client, *, name: str, enabled: bool) -> None:
    """Drains the preloaded stream into the cluster, waits for the replicas, checks that
    every click is there, and prints the figures."""
    from clicks.batch import BatchMaker
    from clicks.clickhouse_import import ClickHouseImporter
    from clicks.enrichment import Enricher
    from clicks.stream import ClickStream
    from slingshot.contract import CLICKS_STREAM

    rows_before, rolled_before = stored_counts()
    importer = ClickHouseImporter(
        stream=ClickStream(client, consumer=f"bench-{name}", batch_size=args.batch_size),
        maker=BatchMaker(Enricher(enabled=enabled), visitors_per_click=True),
    )
    commits = Commits()
    meter = ClusterCpuMeter(stack, cluster)
    meter.start()
    profiler = cProfile.Profile() if args.profile and enabled else None
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    stored = importer.run(once=True, report=commits.append_result)
    if profiler:
        profiler.disable()
    elapsed = time.perf_counter() - started
    settled = settle(cluster)
    cpu = meter.stop()
    rows, rolled_up = stored_counts()
    rows, rolled_up = rows - rows_before, rolled_up - rolled_before
    assert rows == stored == args.clicks, (rows, stored)
    print(
        f"  {name:9} import: {stored:,} clicks in {elapsed:.1f}s = {stored / elapsed:,.0f} clicks/s "
        f"({rolled_up:,} in rollups, stream left {client.xlen(CLICKS_STREAM)}; the replicas caught up "
        f"{settled:.1f}s after)"
    )
    print(
        f"  {name:9} sustained: {commits.sustained():,.0f} clicks/s from the first batch's insert to the "
        f"last's ({len(commits.times)} batches)"
    )
    print(f"  {name:9} {cpu}, until the replicas caught up")
    print(f"  {name:9} {meter.per_click(stored)}")
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)

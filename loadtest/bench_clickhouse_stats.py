"""`make bench-clickhouse-stats`: a year of one link's stats read from the
ClickHouse click store (CLICK_STORE=clickhouse) over 100,000,000 clicks.

Starts a throwaway cluster (devstack/clickhouse.py: ClickHouse 18.16, two
shards, ZooKeeper), applies sql/clickhouse/ (clickhouse_schema.migrate, as
`manage.py migrate_clicks` does), and fills it inside ClickHouse: on one
replica of each shard, `INSERT INTO clicks_local SELECT ... FROM
numbers(...)` in chunks, the clicks that the Distributed table's sharding
(link_id modulo the shards) puts there, spread evenly over the last year
in time order (as the importer writes them), so that the hourly rollup's
materialized view fills as it does on import. One hot link takes
`--hot-share` of all clicks (2 %: 2,000,000 of 100,000,000); the rest go
to `--links` links with a Zipf-like skew. ~12 % bots, visitors from a
pool of 1,000,000.

Then times `clicks.reports.link_stats` (ClickHouseReport) for the hot
link's year: by hour, by day, and by day, week and month in Europe/Paris,
each as the chart asks (series and totals, top=0: the hourly rollup) and
as the stats page asks (top=50, and the totals of the year before: the
breakdowns from the monthly breakdowns' rollup, and the raw clicks of the
days at the year's ends); and the stats page again once the hot link's
visits were deleted a week before the year's end (clicks/clickhouse_deletions.py:
its raw clicks from then on, as the rollups cannot leave the others out).
The reports read which visits were deleted from a throwaway PostgreSQL
(devstack.throwaway), migrated, as the dashboard's.
Cold: the nodes' mark caches dropped and the cluster's files evicted from
the page cache (posix_fadvise DONTNEED, no other file touched) before each
run; warm: run again at once. Medians of `--runs` runs. The cluster and
its files are deleted at the end.

    .venv/bin/python loadtest/bench_clickhouse_stats.py [--clicks 100000000] [--links 100000]
        [--hot-share 0.02] [--replicas 2] [--runs 5] [--smoke]
"""

import argparse
import os
import shutil
import statistics
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from devstack.clickhouse import ClickHouseCluster  # noqa: E402
from devstack.throwaway import ThrowawayStack  # noqa: E402

CHUNK = 10_000_000  # rows an INSERT ... SELECT
BYTES_A_CLICK = 150  # on disk, a replica, with the rollup and room for merges: generous
VISITORS = 1_000_000
# The columns of clicks_local in order, made from `number` (the row's
# place in its shard's year) and the placeholders filled per shard.
FILL = """
INSERT INTO clicks_local
SELECT
    generateUUIDv4() AS click_id,
    toDateTime({start} + intDiv((number + {offset}) * {span}, {rows}), 'UTC') AS occurred_at,
    toUInt16(rand(1) % 1000) AS occurred_ms,
    toInt64(if(rand(2) % 1000000 < {hot_ppm}, {hot}, 2 * toInt64(pow({ranks}, rand(3) / 4294967295.)) + {bit}))
        AS link_id,
    toInt64(rand(4) % 600) AS user_agent_id,
    toUInt8(rand(5) % 100 < 12) AS is_bot,
    concat('l', toString(link_id)) AS slug,
    toNullable(IPv4NumToString(bitAnd(rand(6), 4294967040))) AS ip,
    ['US', 'DE', 'FR', 'GB', 'IN', 'BR', 'JP', 'unknown'][rand(7) % 8 + 1] AS country,
    if(is_bot = 1, 'Googlebot', ['Chrome', 'Safari', 'Firefox', 'Edge', 'Samsung Internet'][rand(8) % 5 + 1])
        AS browser,
    if(is_bot = 1, 'unknown', ['Windows', 'macOS', 'iOS', 'Android', 'Linux'][rand(9) % 5 + 1]) AS os,
    if(is_bot = 1, 'bot', ['desktop', 'mobile', 'tablet'][rand(10) % 3 + 1]) AS device,
    ['', '', '', 'https://www.google.com/', 'https://t.co/abc', 'https://news.ycombinator.com/item?id=1',
     'https://www.reddit.com/r/programming/'][rand(11) % 7 + 1] AS referer,
    domain(referer) AS referer_host,
    [NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '1', 'ab1'][rand(12) % 10 + 1] AS rule,
    CAST(NULL AS Nullable(Int64)) AS import_id,
    toInt64(sipHash64(rand(13) % {visitors})) AS visitor_hash,
    toUInt8(1) AS in_breakdowns
FROM numbers({count})
"""
HOT_LINK = 1  # an odd id: the second shard's


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=100_000_000)
    parser.add_argument("--links", type=int, default=100_000, help="links besides the hot one")
    parser.add_argument("--hot-share", type=float, default=0.02, help="the hot link's share of all clicks")
    parser.add_argument("--replicas", type=int, default=2, help="replicas a shard (two shards)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each case, cold and warm")
    parser.add_argument("--smoke", action="store_true", help="300,000 clicks, 2 runs: that the script works")
    args = parser.parse_args()
    if not 0 < args.hot_share < 1:
        parser.error("--hot-share: a share between 0 and 1")
    if args.smoke:
        args.clicks, args.links, args.runs = 300_000, 1_000, 2
    cluster = ClickHouseCluster(shards=2, replicas=args.replicas)
    stack = ThrowawayStack(prefix="slingshot-bench-ch-stats-")
    scale_to_disk(args, cluster.root)
    try:
        cluster.start()
        stack.start()
        os.environ.update(
            {
                **stack.environment(),
                "DJANGO_SETTINGS_MODULE": "slingshot.settings",
                "CLICK_STORE": "clickhouse",
                "CLICKHOUSE_URLS": ",".join(cluster.urls),
                "LOG_LEVEL": "WARNING",
            }
        )
        import django

        django.setup()
        from django.core.management import call_command

        from clicks.clickhouse_schema import migrate

        call_command("migrate", "--no-input", verbosity=0)

        migrate({node.name: node.client() for node in cluster.nodes}, cluster=cluster.cluster)
        end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        fill(args, cluster, start=end - timedelta(days=365))
        bench_reports(args, cluster, start=end - timedelta(days=365), end=end)
    finally:
        cluster.cleanup()
        stack.cleanup()


def scale_to_disk(args, root: Path) -> None:
    """Fewer clicks, said, when the cluster's folder has not room for them."""
    free = shutil.disk_usage(root).free
    fits = int(free * 0.8 / (BYTES_A_CLICK * args.replicas))
    print(f"bench-clickhouse-stats: {free / 1e9:.0f} GB free at {root.parent}", end="")
    if fits < args.clicks:
        print(f"; {args.clicks:,} clicks would not fit: scaled down to {fits:,}", end="")
        args.clicks = fits
    print()


def fill(args, cluster: ClickHouseCluster, *, start: datetime) -> None:
    """Each shard's clicks over the 365 days from `start`, on its first
    replica, both shards at once; then until every replica has them and the
    merges are done."""
    hot = round(args.clicks * args.hot_share)
    rest = args.clicks - hot
    shards = {1: rest // 2, 2: rest - rest // 2 + hot}  # link_id % 2 == 0 on the first, odd on the second
    print(
        f"  filling {args.clicks:,} clicks of {args.links + 1:,} links over 365 days, the hot link {hot:,} "
        f"({args.hot_share:.1%}), 2 shards x {args.replicas} replicas, ClickHouse "
        f"{cluster.nodes[0].client().execute('SELECT version()')[0][0]}"
    )
    started = time.perf_counter()
    errors = []

    def fill_shard(shard: int, rows: int) -> None:
        node = next(node for node in cluster.nodes if node.shard == shard)
        client = node.client(max_memory_usage=4_000_000_000)
        hot_ppm = round(1_000_000 * hot / rows) if shard == 2 else 0
        try:
            for offset in range(0, rows, CHUNK):
                client.execute(
                    FILL.format(
                        start=int(start.timestamp()),
                        span=365 * 86400,
                        offset=offset,
                        rows=rows,
                        count=min(CHUNK, rows - offset),
                        hot_ppm=hot_ppm,
                        hot=HOT_LINK,
                        ranks=args.links // 2,
                        bit=shard - 1,
                        visitors=VISITORS,
                    )
                )
        except Exception as error:  # raised below, in the main thread
            errors.append(error)

    threads = [threading.Thread(target=fill_shard, args=item) for item in shards.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    inserted = time.perf_counter() - started
    from bench_import_clickhouse import settle

    replicated = settle(cluster, timeout=3600)
    merged = wait_for_merges(cluster)
    disk = sum(f.stat().st_size for f in cluster.root.rglob("*") if f.is_file())
    print(
        f"  filled in {inserted:.0f}s ({args.clicks / inserted:,.0f} clicks/s), replicas caught up "
        f"{replicated:.0f}s later, merges done {merged:.0f}s after that; {disk / 1e9:.1f} GB on disk"
    )


def wait_for_merges(cluster: ClickHouseCluster, timeout: float = 1800) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if not sum(node.client().execute("SELECT count() FROM system.merges")[0][0] for node in cluster.nodes):
            break
        time.sleep(1)
    return time.perf_counter() - started


def drop_caches(cluster: ClickHouseCluster) -> None:
    """The nodes' caches dropped and the cluster's files out of the page cache."""
    for node in cluster.nodes:
        client = node.client()
        client.execute("SYSTEM DROP MARK CACHE")
        client.execute("SYSTEM DROP UNCOMPRESSED CACHE")
    for path in cluster.root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def bench_reports(args, cluster: ClickHouseCluster, *, start: datetime, end: datetime) -> None:
    from clicks import clickhouse_clicks
    from clicks.reports import link_stats

    paris = ZoneInfo("Europe/Paris")
    ((hot_clicks, parts),) = clickhouse_clicks.cluster().execute(
        "SELECT countMerge(clicks), count() FROM click_rollup_hour WHERE link_id = %(id)s", {"id": HOT_LINK}
    )
    print(
        f"  one link's year, {hot_clicks:,} clicks ({parts:,} rollup rows), link_stats with CLICK_STORE=clickhouse,"
        f" median of {args.runs} runs, ms: cold (caches dropped) / warm"
    )
    cases = [
        ("by hour, UTC", "hour", UTC),
        ("by day, UTC", "day", UTC),
        ("by day, Europe/Paris", "day", paris),
        ("by week, Europe/Paris", "week", paris),
        ("by month, Europe/Paris", "month", paris),
    ]
    for name, interval, zone in cases:
        figures = []
        for top, what in [(0, "the chart"), (50, "the stats page")]:
            cold, warm = [], []
            for _ in range(args.runs):
                drop_caches(cluster)
                for timings in (cold, warm):
                    began = time.perf_counter()
                    stats = link_stats(
                        link_ids=[HOT_LINK],
                        start=start,
                        end=end,
                        interval=interval,
                        zone=zone,
                        top=top,
                        compare=bool(top),
                        now=end,
                    )
                    timings.append(time.perf_counter() - began)
            assert stats.totals.clicks + stats.totals.bots == hot_clicks, (stats.totals, hot_clicks)
            figures.append(f"{what} {statistics.median(cold) * 1000:6.0f} / {statistics.median(warm) * 1000:4.0f}")
        print(f"    {name:24} {len(stats.series):5} points: {'; '.join(figures)}")
    bench_after_a_deletion(args, cluster, start=start, end=end)
    clickhouse_clicks.forget_cluster()


def bench_after_a_deletion(args, cluster: ClickHouseCluster, *, start: datetime, end: datetime) -> None:
    """The stats page by day once the hot link's visits were deleted a week
    before the end: the week's raw clicks, read for every figure."""
    from django.db import connection

    from clicks import clickhouse_clicks
    from clicks.reports import link_stats

    deleted = end - timedelta(days=7)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO clickhouse_deletions (link_id, before_ms) VALUES (%s, %s)",
            [HOT_LINK, int(deleted.timestamp() * 1000)],
        )
    ((kept,),) = clickhouse_clicks.cluster().execute(
        "SELECT count() FROM clicks WHERE link_id = %(id)s AND occurred_at >= %(at)s",
        {"id": HOT_LINK, "at": deleted.replace(tzinfo=None)},
    )
    cold, warm = [], []
    for _ in range(args.runs):
        drop_caches(cluster)
        for timings in (cold, warm):
            began = time.perf_counter()
            stats = link_stats(link_ids=[HOT_LINK], start=start, end=end, interval="day", top=50, compare=True, now=end)
            timings.append(time.perf_counter() - began)
    assert stats.totals.clicks + stats.totals.bots == kept, (stats.totals, kept)
    print(
        f"  the hot link's visits deleted a week before the end ({kept:,} clicks kept): the stats page by day, UTC,"
        f" {statistics.median(cold) * 1000:.0f} / {statistics.median(warm) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()

"""Import benchmark: `make bench-import`.

Starts its own PostgreSQL and Redis (durable, as in production: fsync on,
Redis append-only), preloads the click stream in the edge's exact format
(docs/contract.md: ~100 clicks per entry, a realistic mix of browsers, bots,
referrers, addresses and some orphan visits), and times `ClickImporter`
draining it, with enrichment off and then on. Prints clicks/s over the whole
import, and sustained (from the first commit to the last), the CPU each
process spent, and the WAL written a click; then times the stats selectors
(bench_import_selectors.py).

    .venv/bin/python loadtest/bench_import.py [--clicks 3000000] [--batch-size 3000] [--shuffled-times]
                                              [--statements] [--profile] [--smoke] [--store clickhouse]

`--store clickhouse` (`make bench-import CLICK_STORE=clickhouse`): the same
stream into a throwaway ClickHouse cluster instead (bench_import_clickhouse.py).
"""

import argparse
import contextlib
import os
import resource
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from bench_import_meters import Commits, CpuMeter, StatementTimes  # noqa: E402
from bench_import_selectors import bench_selectors  # noqa: E402
from edge_stream import ADDRESSES, preload  # noqa: E402

from devstack.throwaway import ThrowawayStack  # noqa: E402

RUNS = [("plain", False), ("enriched", True)]  # each import's name, and whether it enriches


def parse_args() -> argparse.Namespace:
    """The command line, with --smoke's sizes and the default PostgreSQL settings filled in."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=3_000_000)
    parser.add_argument("--links", type=int, default=2000)
    parser.add_argument(
        "--batch-size",
        type=int,
        help="stream entries per transaction (default: the importer's, CLICK_IMPORT_BATCH_ENTRIES)",
    )
    parser.add_argument(
        "--spread-minutes",
        type=float,
        default=10.0,
        help="clicks' times spread over this many past minutes (a live edge: a few)",
    )
    parser.add_argument(
        "--shuffled-times",
        action="store_true",
        help="clicks at random times of the spread, not in the order an edge writes them",
    )
    parser.add_argument(
        "--ipv6",
        type=float,
        default=6_000 / ADDRESSES,
        metavar="SHARE",
        help=f"the share of the {ADDRESSES:,} client addresses that are IPv6 (default: 6,000 of them)",
    )
    parser.add_argument("--fast-fsync-off", action="store_true", help="PostgreSQL with fsync=off (not production)")
    parser.add_argument("--only", choices=["enriched", "plain"], help="run one of the two imports")
    parser.add_argument(
        "--pg-setting",
        action="append",
        metavar="NAME=VALUE",
        help="PostgreSQL server setting, repeatable (default: shared_buffers=2GB, max_wal_size=4GB, "
        "as a production server would have; --pg-setting '' for PostgreSQL's own defaults)",
    )
    parser.add_argument(
        "--ip-storage",
        choices=["anonymise", "full", "none"],
        help="what the links' team keeps of an address (Team.ip_storage; default: as CLICK_IP_PRIVACY says)",
    )
    parser.add_argument(
        "--store",
        choices=["postgresql", "clickhouse"],
        default=os.environ.get("CLICK_STORE") or "postgresql",
        help="the click store (default: CLICK_STORE, else postgresql)",
    )
    parser.add_argument("--skip-selectors", action="store_true", help="do not time the stats selectors")
    parser.add_argument("--profile", action="store_true", help="cProfile the enriched import, top 25 by own time")
    parser.add_argument("--statements", action="store_true", help="time each SQL statement of the import")
    parser.add_argument(
        "--smoke", action="store_true", help="20,000 clicks and 3 days of rollups: that the script works (make test)"
    )
    args = parser.parse_args()
    if not 0 <= args.ipv6 <= 1:
        parser.error("--ipv6: a share from 0 to 1")
    if args.store == "clickhouse" and args.statements:
        parser.error("--statements: PostgreSQL's")
    args.selector_days, args.selector_clicks = 365, 10_000_000
    if args.smoke:
        args.clicks, args.links, args.selector_days, args.selector_clicks = 20_000, 50, 3, 20_000
    if args.pg_setting is None:
        args.pg_setting = ["shared_buffers=2GB", "max_wal_size=4GB"]
    args.pg_setting = [setting for setting in args.pg_setting if setting]
    return args


def main() -> None:
    args = parse_args()
    stack = ThrowawayStack(prefix="slingshot-bench-import-", durable=not args.fast_fsync_off)
    try:
        stack.start()
        tune_postgres(stack, args.pg_setting)
        os.environ.update(
            {**stack.environment(), "DJANGO_SETTINGS_MODULE": "slingshot.settings", "LOG_LEVEL": "WARNING"}
        )
        os.environ["CLICK_STORE"] = "postgresql"  # bench_import_clickhouse sets its own
        if args.store == "clickhouse":
            from bench_import_clickhouse import run_clickhouse

            run_clickhouse(args, stack)
        else:
            run_bench(args, stack)
    finally:
        stack.cleanup()


def tune_postgres(stack: ThrowawayStack, settings: list[str]) -> None:
    """Applies NAME=VALUE server settings (ALTER SYSTEM) and restarts PostgreSQL."""
    if not settings:
        return
    import psycopg
    from psycopg import sql

    with psycopg.connect(
        host=str(stack.pg_dir), port=stack.pg_port, user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        for setting in settings:
            name, _, value = setting.partition("=")
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value)))
    stack.restart_postgres()


def make_links(args) -> tuple:
    """The benchmark's user and its --links links as (slug, id), its team keeping addresses as --ip-storage says."""
    from django.contrib.auth import get_user_model

    from links.fields import LinkFields
    from links.services import link_bulk_create

    owner = get_user_model().objects.create_user("bench")
    made = link_bulk_create(
        owner=owner,
        items=[(LinkFields(url=f"https://example.com/{i}", slug=f"bench{i}"), None) for i in range(args.links)],
    )
    links = [(result.link.slug, result.link.pk) for result in made]
    if args.ip_storage:
        from teams.models import Team

        Team.objects.filter(personal_for=owner).update(ip_storage=args.ip_storage)
    return owner, links


def describe_load(args) -> str:
    """The stream and the batches, as the first line of either store's run tells them."""
    return (
        f"{args.clicks:,} clicks over {args.spread_minutes:g} minutes "
        f"({'at shuffled times' if args.shuffled_times else 'in the order an edge writes them'}), "
        f"{args.links} links, {ADDRESSES:,} addresses ({round(ADDRESSES * args.ipv6):,} IPv6), "
        f"batches of {args.batch_size} entries"
    )


def preload_stream(client, args, links: list[tuple[str, int]], *, seed: int) -> None:
    """Fills the click stream as the edge writes it, and says how long that took."""
    from slingshot.contract import CLICKS_STREAM

    started = time.perf_counter()
    entries = preload(
        client,
        clicks=args.clicks,
        links=links,
        seed=seed,
        stream=CLICKS_STREAM,
        spread_ms=int(args.spread_minutes * 60_000),
        shuffled_times=args.shuffled_times,
        ipv6_addresses=round(ADDRESSES * args.ipv6),
    )
    print(
        f"  preloaded {entries:,} entries in {time.perf_counter() - started:.1f}s "
        f"({client.info('memory')['used_memory_human']} in Redis)"
    )


@dataclass
class ImportRun:
    """What one import into PostgreSQL stored, and what it cost."""

    name: str
    stored: int
    elapsed: float  # seconds, folding the day tables included
    fold_seconds: float
    rolled_up: int
    wal: float  # bytes
    cpu: str  # CpuMeter.stop()'s line
    meter: CpuMeter
    commits: Commits


def run_bench(args, stack: ThrowawayStack) -> None:
    """The plain and the enriched import into PostgreSQL, one after the other, then the stats selectors."""
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from clicks.importer import tune_gc
    from links.fields import LinkFields
    from links.services import link_create
    from slingshot.redis import get_redis

    call_command("migrate", verbosity=0)
    args.batch_size = args.batch_size or settings.CLICK_IMPORT_BATCH_ENTRIES
    tune_gc()  # as import_clicks does
    owner, links = make_links(args)
    client = get_redis()
    durability = "fsync=off" if args.fast_fsync_off else "fsync on, synchronous_commit on"
    durability += "".join(f", {setting}" for setting in args.pg_setting)
    print(
        f"bench-import: {describe_load(args)}, PostgreSQL {durability}, Redis appendonly"
        f"{f', the team keeps addresses {args.ip_storage}' if args.ip_storage else ''}"
    )
    for seed, (name, enabled) in enumerate(RUNS):
        if args.only and args.only != name:
            continue
        empty_click_tables()
        preload_stream(client, args, links, seed=seed)
        print_run(import_once(args, stack, client, name=name, enabled=enabled), client)
    if not args.skip_selectors:
        bench_selectors(
            link_create(owner=owner, fields=LinkFields(url="https://example.com/", slug="bench-stats")).pk,
            days=args.selector_days,
            clicks=args.selector_clicks,
        )
    connection.close()


def empty_click_tables() -> None:
    """No click, orphan visit or rollup left, and the day fold's mark back at the start."""
    from django.db import connection

    from clicks.rollups import ROLLUP_TABLES

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE clicks, orphan_visits, {', '.join(ROLLUP_TABLES)}")
        cursor.execute("UPDATE click_day_fold SET folded_before = '1970-01-01 00:00+00'")


def import_once(args, stack: ThrowawayStack, client, *, name: str, enabled: bool) -> ImportRun:
    """Drains the preloaded stream with a ClickImporter and folds the day tables, measuring both."""
    from django.db import connection

    from clicks.batch import BatchMaker
    from clicks.enrichment import Enricher
    from clicks.importer import ClickImporter
    from clicks.rollups import fold_days
    from clicks.stream import ClickStream

    importer = ClickImporter(
        stream=ClickStream(client, consumer=f"bench-{name}", batch_size=args.batch_size),
        maker=BatchMaker(Enricher(enabled=enabled)),
    )
    profiler = None
    if args.profile and enabled:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    timings = StatementTimes(connection)
    commits = Commits()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn()")
        wal_before = cursor.fetchone()[0]
    meter = CpuMeter(stack)
    meter.start()
    started = time.perf_counter()
    with statements_timed(importer, timings) if args.statements else contextlib.nullcontext():
        stored = importer.run(once=True, report=commits.append_result)
        # The day tables are folded from the hours later on; timed here,
        # all of it at once, so that the figure is the whole cost.
        fold_started = time.perf_counter()
        fold_days(until=datetime.now(timezone.utc) + timedelta(hours=2))
    elapsed = time.perf_counter() - started
    fold_seconds = time.perf_counter() - fold_started
    cpu = meter.stop()
    timings.print()
    if profiler:
        import pstats

        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)", [wal_before])
        wal = float(cursor.fetchone()[0])
        cursor.execute(
            "SELECT (SELECT count(*) FROM clicks) + (SELECT count(*) FROM orphan_visits),"
            " (SELECT coalesce(sum(clicks), 0) FROM click_rollup_day)"
        )
        rows, rolled_up = cursor.fetchone()
    assert rows == stored == args.clicks, (rows, stored)
    return ImportRun(name, stored, elapsed, fold_seconds, rolled_up, wal, cpu, meter, commits)


@contextlib.contextmanager
def statements_timed(importer, timings: StatementTimes):
    """Times every SQL statement sent through Django's connection, and the importer's COPYs."""
    from clicks.importer import ClickImporter

    copy = ClickImporter._copy

    def timed_copy(cursor, statement, payload):
        with timings.measuring(statement):
            return copy(cursor, statement, payload)

    importer._copy = timed_copy
    with timings.connection.execute_wrapper(timings):
        yield


def print_run(run: ImportRun, client) -> None:
    """The import's figures: clicks/s whole and sustained, CPU, WAL and memory, and CPU a click."""
    from slingshot.contract import CLICKS_STREAM

    name, stored, elapsed = run.name, run.stored, run.elapsed
    print(
        f"  {name:9} import: {stored:,} clicks in {elapsed:.1f}s = {stored / elapsed:,.0f} clicks/s "
        f"({run.rolled_up:,} in rollups, stream left {client.xlen(CLICKS_STREAM)}; "
        f"folding the day tables took {run.fold_seconds:.2f}s of it)"
    )
    print(
        f"  {name:9} sustained: {run.commits.sustained():,.0f} clicks/s from the first batch's commit to the "
        f"last's ({len(run.commits.times)} batches; the first batch is read and parsed before anything "
        f"overlaps, and a live importer does that once)"
    )
    print(
        f"  {name:9} {run.cpu}; WAL {run.wal / stored:,.0f} bytes a click; this process (the importer) peaked at "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB resident"
    )
    print(f"  {name:9} {run.meter.per_click(stored)}")


if __name__ == "__main__":
    main()

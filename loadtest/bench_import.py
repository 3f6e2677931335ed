"""Import benchmark: `make bench-import`.

Starts its own PostgreSQL and Redis (durable, as in production: fsync on,
Redis append-only), preloads the click stream in the edge's exact format
(docs/contract.md: ~100 clicks per entry, a realistic mix of browsers, bots,
referrers, addresses and some orphan visits), and times `ClickImporter`
draining it, with enrichment off and then on. Prints clicks/s over the whole
import, and sustained (from the first commit to the last), the CPU each
process spent, and the WAL written a click.

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
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from edge_stream import ADDRESSES, preload  # noqa: E402
from procstat import CLOCK_TICKS, children, cpu_seconds  # noqa: E402
from rollup_data import ANALYZE, write_rollups  # noqa: E402

from devstack.throwaway import ThrowawayStack  # noqa: E402


def main() -> None:
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


class CpuMeter:
    """CPU seconds spent by PostgreSQL (every process, including backends
    that have exited, which their postmaster has reaped), Redis, and the
    importer (this process: its main thread and its reader thread), between
    start() and stop()."""

    def __init__(self, stack: ThrowawayStack):
        self.stack = stack

    def _postgres(self) -> float:
        postmaster = self.stack.postgres.pid
        fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
        reaped = (int(fields[13]) + int(fields[14])) / CLOCK_TICKS  # cutime, cstime
        return cpu_seconds([postmaster, *children(postmaster)]) + reaped

    def _sample(self) -> dict[str, float]:
        return {
            "postgres": self._postgres(),
            "redis": cpu_seconds([self.stack.redis.pid]),
            "importer": cpu_seconds([os.getpid()]),
        }

    def start(self) -> None:
        self.before, self.started = self._sample(), time.perf_counter()

    def stop(self) -> str:
        wall = time.perf_counter() - self.started
        after = self._sample()
        spent = {name: after[name] - self.before.get(name, 0.0) for name in after}
        self.spent = spent = {name: seconds for name, seconds in spent.items() if seconds >= 0.05}
        parts = ", ".join(f"{name} {seconds:.1f}" for name, seconds in sorted(spent.items(), key=lambda i: -i[1]))
        return f"CPU seconds over {wall:.1f}s: {parts}; {sum(spent.values()) / wall:.2f} of {os.cpu_count()} cores busy"

    def per_click(self, clicks: int) -> str:
        """What stop() measured, in CPU µs a click."""
        parts = ", ".join(f"{name} {seconds * 1e6 / clicks:.2f}" for name, seconds in self.spent.items())
        return f"CPU µs a click: {parts}; {sum(self.spent.values()) * 1e6 / clicks:.2f} in all"


class Commits:
    """When each batch was committed, and how many clicks it stored."""

    def __init__(self):
        self.times: list[float] = []
        self.stored: list[int] = []

    def append_result(self, result) -> None:
        self.times.append(time.perf_counter())
        self.stored.append(result.stored)

    def sustained(self) -> float:
        """Clicks stored per second between the first commit and the last."""
        if len(self.times) < 2:
            return float("nan")
        return sum(self.stored[1:]) / (self.times[-1] - self.times[0])


class StatementTimes:
    """Per SQL statement of Django's `connection` (its first 60 characters):
    wall seconds and the CPU seconds of the backend that ran it. Passed to
    `connection.execute_wrapper`, it times every statement sent through a
    cursor; `measuring` times anything else (a COPY)."""

    def __init__(self, connection):
        self.connection = connection
        self.spent: dict[str, list[float]] = {}

    @contextlib.contextmanager
    def measuring(self, sql: str):
        self.connection.ensure_connection()
        backend = [self.connection.connection.info.backend_pid]
        began, cpu_began = time.perf_counter(), cpu_seconds(backend)
        try:
            yield
        finally:
            spent = self.spent.setdefault(" ".join(sql.split())[:60], [0.0, 0.0])
            spent[0] += time.perf_counter() - began
            spent[1] += cpu_seconds(backend) - cpu_began

    def __call__(self, execute, sql, params, many, context):
        with self.measuring(sql):
            return execute(sql, params, many, context)

    def print(self, top: int = 12) -> None:
        if self.spent:
            print("    wall s  backend CPU s  statement")
        for key, (seconds, cpu_spent) in sorted(self.spent.items(), key=lambda item: -item[1][1])[:top]:
            print(f"    {seconds:6.2f}  {cpu_spent:13.2f}  {key}")


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


def run_bench(args, stack: ThrowawayStack) -> None:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from clicks.batch import BatchMaker
    from clicks.enrichment import Enricher
    from clicks.importer import ClickImporter, tune_gc
    from clicks.rollups import ROLLUP_TABLES, fold_days
    from clicks.stream import ClickStream
    from links.fields import LinkFields
    from links.services import link_bulk_create, link_create
    from slingshot.contract import CLICKS_STREAM as STREAM
    from slingshot.redis import get_redis

    call_command("migrate", verbosity=0)
    args.batch_size = args.batch_size or settings.CLICK_IMPORT_BATCH_ENTRIES
    tune_gc()  # as import_clicks does
    owner = get_user_model().objects.create_user("bench")
    made = link_bulk_create(
        owner=owner,
        items=[(LinkFields(url=f"https://example.com/{i}", slug=f"bench{i}"), None) for i in range(args.links)],
    )
    links = [(result.link.slug, result.link.pk) for result in made]
    if args.ip_storage:
        from teams.models import Team

        Team.objects.filter(personal_for=owner).update(ip_storage=args.ip_storage)
    client = get_redis()
    durability = "fsync=off" if args.fast_fsync_off else "fsync on, synchronous_commit on"
    durability += "".join(f", {setting}" for setting in args.pg_setting)
    print(
        f"bench-import: {args.clicks:,} clicks over {args.spread_minutes:g} minutes "
        f"({'at shuffled times' if args.shuffled_times else 'in the order an edge writes them'}), "
        f"{args.links} links, {ADDRESSES:,} addresses ({round(ADDRESSES * args.ipv6):,} IPv6), "
        f"batches of {args.batch_size} entries, PostgreSQL {durability}, Redis appendonly"
        f"{f', the team keeps addresses {args.ip_storage}' if args.ip_storage else ''}"
    )

    runs = [("plain", False), ("enriched", True)]
    for seed, (name, enabled) in enumerate(runs):
        if args.only and args.only != name:
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE clicks, orphan_visits, {', '.join(ROLLUP_TABLES)}")
            cursor.execute("UPDATE click_day_fold SET folded_before = '1970-01-01 00:00+00'")
        started = time.perf_counter()
        entries = preload(
            client,
            clicks=args.clicks,
            links=links,
            seed=seed,
            stream=STREAM,
            spread_ms=int(args.spread_minutes * 60_000),
            shuffled_times=args.shuffled_times,
            ipv6_addresses=round(ADDRESSES * args.ipv6),
        )
        print(
            f"  preloaded {entries:,} entries in {time.perf_counter() - started:.1f}s "
            f"({client.info('memory')['used_memory_human']} in Redis)"
        )
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
        if args.statements:
            copy = ClickImporter._copy

            def timed_copy(cursor, statement, payload, copy=copy, timings=timings):
                with timings.measuring(statement):
                    return copy(cursor, statement, payload)

            importer._copy = timed_copy
            with connection.execute_wrapper(timings):
                stored = importer.run(once=True, report=commits.append_result)
                fold_started = time.perf_counter()
                fold_days(until=datetime.now(timezone.utc) + timedelta(hours=2))
        else:
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
        print(
            f"  {name:9} import: {stored:,} clicks in {elapsed:.1f}s = {stored / elapsed:,.0f} clicks/s "
            f"({rolled_up:,} in rollups, stream left {client.xlen(STREAM)}; "
            f"folding the day tables took {fold_seconds:.2f}s of it)"
        )
        print(
            f"  {name:9} sustained: {commits.sustained():,.0f} clicks/s from the first batch's commit to the "
            f"last's ({len(commits.times)} batches; the first batch is read and parsed before anything "
            f"overlaps, and a live importer does that once)"
        )
        print(
            f"  {name:9} {cpu}; WAL {wal / stored:,.0f} bytes a click; this process (the importer) peaked at "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB resident"
        )
        print(f"  {name:9} {meter.per_click(stored)}")
    if not args.skip_selectors:
        bench_selectors(
            link_create(owner=owner, fields=LinkFields(url="https://example.com/", slug="bench-stats")).pk,
            days=args.selector_days,
            clicks=args.selector_clicks,
        )
    connection.close()


def bench_selectors(link_id: int, *, days: int = 365, clicks: int = 10_000_000) -> None:
    """The reads the stats API makes, for one link with `clicks` clicks over
    `days` days. Selectors read only rollups, so the rollups are written
    directly, as a year of traffic leaves them (rollup_data.py)."""
    from django.db import connection

    from clicks.reports import link_stats, link_totals

    started = time.perf_counter()
    with connection.cursor() as cursor:
        total = write_rollups(cursor, link_id=link_id, clicks=clicks, days=days)
    connection.set_autocommit(True)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {ANALYZE}")
    print(
        f"  selectors, one link with {total:,} clicks over {days} days (rollups written in "
        f"{time.perf_counter() - started:.1f}s):"
    )
    now = datetime.now(timezone.utc)
    cases = [
        ("link_stats a year by day", dict(start=now - timedelta(days=days), end=now, interval="day")),
        (
            "link_stats a year by day, Asia/Kolkata",
            dict(start=now - timedelta(days=days), end=now, interval="day", zone=ZoneInfo("Asia/Kolkata")),
        ),
        ("link_stats 30 days by hour", dict(start=now - timedelta(days=min(days, 30)), end=now, interval="hour")),
        ("link_stats a year by hour", dict(start=now - timedelta(days=days), end=now, interval="hour")),
        (
            "link_stats 48 hours by hour, bots",
            dict(start=now - timedelta(hours=48), end=now, interval="hour", include_bots=True),
        ),
    ]
    for name, kwargs in cases:
        timings = []
        for _ in range(7):
            began = time.perf_counter()
            link_stats(link_ids=[link_id], **kwargs)
            timings.append(time.perf_counter() - began)
        print(f"    {name:36} median {sorted(timings)[3] * 1000:6.1f} ms")
    timings = []
    for _ in range(7):
        began = time.perf_counter()
        link_totals(link_ids=[link_id])
        timings.append(time.perf_counter() - began)
    print(f"    {'link_totals':36} median {sorted(timings)[3] * 1000:6.1f} ms")


if __name__ == "__main__":
    main()

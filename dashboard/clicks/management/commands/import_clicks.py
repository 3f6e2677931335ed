import argparse
import json
import socket
import sys
import time
from dataclasses import asdict
from datetime import datetime, timezone

import psycopg
import redis
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import InterfaceError, OperationalError

from clicks.batch import BatchMaker
from clicks.clickhouse_clicks import ClickHouseUnavailable, using_clickhouse
from clicks.clickhouse_import import ClickHouseImporter, forget_marks
from clicks.clickhouse_retention import months_drop
from clicks.enrichment import Enricher
from clicks.importer import BatchResult, ClickImporter, ConsumerBusy, tune_gc
from clicks.metrics import ImporterMetrics
from clicks.partitions import click_tables_maintain, months_before
from clicks.retention import visits_purge
from clicks.rollups import FOLD_AFTER, fold_days
from clicks.stores import PRIMARY, click_store, store_names
from clicks.stream import ClickStream, import_lag
from slingshot.commands import ServiceCommand
from slingshot.metrics import add_metrics_arguments, serve_metrics

EXIT_CONSUMER_BUSY = 3
MAINTENANCE_EVERY = 24 * 3600.0
# Transactions of a retention purge between two batches, until it is done.
PURGE_STEPS = 10
# A connection lost at any point: nothing is acknowledged before its COMMIT,
# so the same work is done again, and a batch stored twice counts once. On
# ClickHouse, any error of an insert (a shard away, ZooKeeper lost) is
# waited out the same way: the batch is sent again as it was.
# psycopg's own errors reach here from COPY, which Django does not wrap.
RETRYABLE = (
    ClickHouseUnavailable,
    redis.ConnectionError,
    redis.TimeoutError,
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)


def retryable() -> tuple[type[Exception], ...]:
    """RETRYABLE, and every error of ClickHouse's driver when clicks go to
    ClickHouse: the driver is imported only then (0.12 s of CPU at each
    start of an importer that stores in PostgreSQL)."""
    if not using_clickhouse():
        return RETRYABLE
    import clickhouse_driver.errors

    return (*RETRYABLE, clickhouse_driver.errors.Error)


class Progress:
    """Counts what the importer did; shows a progress bar (--once on a
    terminal) or logs a line every `interval` seconds (follow mode)."""

    def __init__(self, *, command: BaseCommand, client: redis.Redis, bar: bool, interval: float):
        self.command, self.client, self.interval = command, client, interval
        self.started = self.since = time.monotonic()
        self.totals = {"batches": 0, "entries": 0, "clicks": 0, "stored": 0, "dead": 0}
        self.window = dict(self.totals)
        self.bar = None
        if bar:
            from tqdm import tqdm

            backlog = import_lag(client=client).backlog
            self.bar = tqdm(total=backlog, unit="entries", desc="import_clicks", file=sys.stderr, smoothing=0.1)

    def __call__(self, result: BatchResult) -> None:
        for counts in (self.totals, self.window):
            counts["batches"] += 1
            counts["entries"] += result.entries
            counts["clicks"] += result.clicks
            counts["stored"] += result.stored
            counts["dead"] += result.dead
        if self.bar is not None:
            elapsed = max(time.monotonic() - self.started, 1e-9)
            if self.bar.n + result.entries > self.bar.total:
                self.bar.total = self.bar.n + result.entries  # entries arrived while we ran
            self.bar.update(result.entries)
            self.bar.set_postfix(
                clicks_s=f"{self.totals['clicks'] / elapsed:,.0f}", backlog=self.bar.total - self.bar.n, refresh=False
            )
        elif time.monotonic() - self.since >= self.interval:
            self.log_window()

    def log_window(self) -> None:
        elapsed = max(time.monotonic() - self.since, 1e-9)
        window = self.window
        try:
            lag = import_lag(client=self.client)
            backlog = f"lag {lag.backlog} entries ({lag.pending} pending), oldest {lag.oldest_age_seconds:.1f}s"
        except redis.RedisError as exc:
            backlog = f"lag unknown ({exc.__class__.__name__})"
        self.command.stdout.write(
            f"import_clicks: {window['batches']} batches, {window['entries']} entries, {window['clicks']} clicks "
            f"({window['stored']} new, {window['dead']} dead entries) in {elapsed:.1f}s, "
            f"{window['clicks'] / elapsed:,.0f} clicks/s; {backlog}"
        )
        self.window = dict.fromkeys(window, 0)
        self.since = time.monotonic()

    def close(self) -> None:
        """At the end: the bar closed, or the last window's line logged."""
        if self.bar is not None:
            self.bar.close()
        elif self.window["batches"]:
            self.log_window()


class Upkeep:
    """What the importer does now and then between batches: the click
    tables' partitions kept (once a day), the days due folded, and the
    teams' visits past their retention purged (a few transactions between
    two batches until done, then again in CLICK_PURGE_EVERY_MINUTES)."""

    def __init__(self):
        self.due = 0.0
        self.purge_due = 0.0
        self.purge_from = None  # where a purge stopped at its budget, to go on from

    def __call__(self) -> None:
        if time.monotonic() >= self.due:
            now = datetime.now(timezone.utc)
            click_tables_maintain(
                now=now,
                months_ahead=settings.CLICK_PARTITIONS_AHEAD,
                retention_months=settings.CLICK_RETENTION_MONTHS,
            )
            if using_clickhouse():
                forget_marks()
                if settings.CLICK_RETENTION_MONTHS > 0:
                    months_drop(months_before(now, settings.CLICK_RETENTION_MONTHS))
            self.due = time.monotonic() + MAINTENANCE_EVERY
        fold_days(until=datetime.now(timezone.utc) - FOLD_AFTER)
        if time.monotonic() >= self.purge_due:
            run = visits_purge(budget=PURGE_STEPS, go_on_from=self.purge_from)
            self.purge_from = run.go_on_from
            self.purge_due = time.monotonic() + (settings.CLICK_PURGE_EVERY_MINUTES * 60.0 if run.finished else 0.0)


class Command(ServiceCommand):
    help = "Import clicks from the Redis stream into the click store, PostgreSQL or ClickHouse (follows the stream unless --once)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="drain what is in the stream now, then exit")
        parser.add_argument(
            "--consumer",
            help="consumer name in the group (default: the host name, or <host name>-once with --once); keep it "
            "stable across restarts, and give every importer running at once its own",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=settings.CLICK_IMPORT_BATCH_ENTRIES,
            help="stream entries per transaction (the edge puts up to 100 clicks in one)",
        )
        parser.add_argument("--block-ms", type=int, default=1000, help="how long a read waits for new entries")
        parser.add_argument(
            "--linger-ms",
            type=int,
            default=settings.CLICK_IMPORT_LINGER_MS,
            help="read new entries at most this often while following, so that a batch gathers what came in",
        )
        parser.add_argument(
            "--claim-idle-ms",
            type=int,
            default=settings.CLICK_IMPORT_CLAIM_IDLE_MS,
            help="take over entries another consumer left pending this long",
        )
        parser.add_argument(
            "--store",
            default=PRIMARY,
            help=f"the click store to read (default: {PRIMARY}, the Redis primary; others are named in CLICK_STORES)",
        )
        parser.add_argument("--lag", action="store_true", help="print the import lag as JSON and exit")
        parser.add_argument(
            "--progress",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="progress bar (default: with --once on a terminal)",
        )
        add_metrics_arguments(
            parser,
            port=settings.IMPORTER_METRICS_PORT,
            address=settings.IMPORTER_METRICS_ADDRESS,
            setting="IMPORTER_METRICS_PORT",
        )

    def handle(
        self,
        *args,
        once,
        consumer,
        batch_size,
        block_ms,
        linger_ms,
        claim_idle_ms,
        store,
        lag,
        progress,
        metrics_port,
        metrics_address,
        **options,
    ):
        if store not in store_names():
            raise CommandError(f"--store: no store {store!r}; CLICK_STORES names {', '.join(store_names())}")
        client = click_store(store)
        if lag:
            self.stdout.write(json.dumps(asdict(import_lag(client=client))))
            return
        if batch_size < 1 or block_ms < 0 or linger_ms < 0 or claim_idle_ms < 1:
            raise CommandError(
                "--batch-size and --claim-idle-ms must be positive, --block-ms and --linger-ms not negative"
            )
        # A drain by hand beside a following importer must not take its name.
        consumer = consumer or socket.gethostname() + ("-once" if once else "")
        stream = ClickStream(client, consumer=consumer, store=store, batch_size=batch_size, claim_idle_ms=claim_idle_ms)
        enricher = Enricher(ip_privacy=settings.CLICK_IP_PRIVACY, enabled=settings.CLICK_ENRICH)
        maker = BatchMaker(enricher, visitors_per_click=using_clickhouse())
        kind = ClickHouseImporter if using_clickhouse() else ClickImporter
        importer = kind(stream=stream, maker=maker, block_ms=block_ms, linger_ms=linger_ms)
        metrics = ImporterMetrics(lag_client=client)
        serve_metrics(metrics.registry, port=metrics_port, address=metrics_address, who="import_clicks")
        tune_gc()
        show_bar = progress if progress is not None else (once and sys.stderr.isatty())
        total, meter = self.run_importer(
            importer, stream, metrics, once=once, bar=show_bar and once, who=f"import_clicks[{store}/{consumer}]"
        )
        if once:
            counts = meter.totals
            self.stdout.write(f"imported {total} clicks ({counts['clicks']} read, {counts['dead']} dead entries)")

    def run_importer(
        self, importer: ClickImporter, stream: ClickStream, metrics: ImporterMetrics, *, once: bool, bar: bool, who: str
    ) -> tuple[int, Progress | None]:
        """Runs the importer until the stream is drained (once) or the
        command stops, again after each lost connection; the clicks it
        stored, and what it counted."""
        maintain = Upkeep()
        meter = None
        attempt = 0
        total = 0

        def report(result: BatchResult):
            nonlocal attempt
            attempt = 0
            meter(result)
            metrics.batch_done(result)

        retried = (*retryable(), redis.ResponseError)
        try:
            while not self.stopping:
                try:
                    if meter is None:
                        meter = Progress(
                            command=self, client=stream.redis, bar=bar, interval=settings.CLICK_IMPORT_LOG_INTERVAL
                        )
                    total += importer.run(
                        once=once, should_stop=lambda: self.stopping, report=report, every_so_often=maintain
                    )
                    if once:
                        stream.leave()
                    break
                except ConsumerBusy as exc:
                    raise CommandError(f"import_clicks: {exc}; exiting", returncode=EXIT_CONSUMER_BUSY) from None
                except retried as exc:
                    # A Redis that came back without the consumer group (an
                    # older snapshot) gets it again, from the stream's start.
                    if isinstance(exc, redis.ResponseError) and "NOGROUP" not in str(exc):
                        raise
                    metrics.retries.inc()
                    self.retry_later(exc, attempt=attempt, first=0.5, cap=30.0, who=who)
                    attempt += 1
        finally:
            if meter is not None:
                meter.close()
        return total, meter

import signal
import socket
import time

import redis
from django.core.management.base import BaseCommand
from django.db import OperationalError, InterfaceError, connection

from clicks.importer import ClickImporter
from links.redis import get_redis


class Command(BaseCommand):
    help = "Import clicks from the Redis stream into PostgreSQL (follows the stream unless --once)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="drain what is in the stream now, then exit")
        parser.add_argument(
            "--consumer",
            default=socket.gethostname(),
            help="consumer name in the group (default: host name); keep it stable across restarts",
        )
        parser.add_argument("--batch-size", type=int, default=5000)
        parser.add_argument("--block-ms", type=int, default=1000)

    def handle(self, *args, once, consumer, batch_size, block_ms, **options):
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

        importer = ClickImporter(client=get_redis(), consumer=consumer, batch_size=batch_size, block_ms=block_ms)
        progress = {"entries": 0, "clicks": 0, "stored": 0, "since": time.monotonic()}

        attempt = 0

        def report(entries, read, stored):
            nonlocal attempt
            attempt = 0
            progress["entries"] += entries
            progress["clicks"] += read
            progress["stored"] += stored
            if not once and time.monotonic() - progress["since"] >= 10:
                self._log_progress(progress)

        total = 0
        while not stopping:
            try:
                total += importer.run(once=once, should_stop=lambda: stopping, report=report)
                break
            except (redis.ConnectionError, redis.TimeoutError, OperationalError, InterfaceError) as exc:
                # Redis or PostgreSQL went away: nothing was acknowledged that
                # was not committed, so retry the same work when it is back.
                connection.close()
                self.stderr.write(f"import_clicks: {exc.__class__.__name__}: {exc}; retrying")
                deadline = time.monotonic() + min(30.0, 0.5 * 2**attempt)
                while not stopping and time.monotonic() < deadline:
                    time.sleep(0.1)
                attempt += 1
        if once:
            self.stdout.write(f"imported {total} clicks ({progress['clicks']} read)")

    def _log_progress(self, progress):
        elapsed = time.monotonic() - progress["since"]
        self.stdout.write(
            f"import_clicks: {progress['clicks']} clicks in {progress['entries']} entries, "
            f"{progress['stored']} new, {progress['clicks'] / elapsed:.0f} clicks/s"
        )
        progress.update(entries=0, clicks=0, stored=0, since=time.monotonic())

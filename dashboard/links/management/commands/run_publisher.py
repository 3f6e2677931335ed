import signal
import time

import redis
from django.core.management.base import BaseCommand
from django.db import InterfaceError, OperationalError, connection

from links.publishing import deliver_outbox


class Command(BaseCommand):
    help = "Deliver link changes from the outbox to Redis, retrying until Redis takes them."

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=0.5, help="seconds between outbox polls")

    def handle(self, *args, interval, **options):
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        failures = 0
        while not stopping:
            try:
                delivered = deliver_outbox()
                if delivered:
                    self.stdout.write(f"run_publisher: published {delivered} link changes")
                if failures:
                    self.stdout.write("run_publisher: Redis and PostgreSQL reachable again")
                failures = 0
                pause = interval
            except (redis.RedisError, OperationalError, InterfaceError) as exc:
                connection.close()
                failures += 1
                pause = min(5.0, interval * 2**failures)
                self.stderr.write(f"run_publisher: {exc.__class__.__name__}: {exc}; retrying in {pause:.1f}s")
            deadline = time.monotonic() + pause
            while not stopping and time.monotonic() < deadline:
                time.sleep(0.05)

import signal
import time

import psycopg
import redis
from django.core.management.base import BaseCommand
from django.db import InterfaceError, OperationalError, connection

from links.publishing import OUTBOX_CHANNEL, deliver_outbox


class Command(BaseCommand):
    help = (
        "Deliver link changes from the outbox to Redis: woken by NOTIFY, polling as a fallback, "
        "retrying with backoff until Redis takes every change."
    )

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls without a NOTIFY")

    def handle(self, *args, interval, **options):
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        listener = None
        failures = 0
        while not stopping:
            try:
                if listener is None or listener.closed:
                    listener = self.listen()
                delivered = deliver_outbox()
                if delivered:
                    self.stdout.write(f"run_publisher: published {delivered} link changes")
                if failures:
                    self.stdout.write("run_publisher: Redis and PostgreSQL reachable again")
                failures = 0
                # Sleep until a change is committed (NOTIFY), or for `interval`.
                for _ in listener.notifies(timeout=interval, stop_after=1):
                    pass
            except (redis.RedisError, OperationalError, InterfaceError, psycopg.Error) as exc:
                connection.close()
                if listener is not None:
                    listener.close()
                failures += 1
                pause = min(5.0, 0.2 * 2**failures)
                self.stderr.write(f"run_publisher: {exc.__class__.__name__}: {exc}; retrying in {pause:.1f}s")
                deadline = time.monotonic() + pause
                while not stopping and time.monotonic() < deadline:
                    time.sleep(0.05)
        if listener is not None:
            listener.close()

    def listen(self) -> psycopg.Connection:
        db = connection.settings_dict
        listener = psycopg.connect(
            host=db["HOST"], port=db["PORT"] or None, user=db["USER"], password=db["PASSWORD"], dbname=db["NAME"],
            autocommit=True,
        )
        listener.execute(f"LISTEN {OUTBOX_CHANNEL}")
        return listener

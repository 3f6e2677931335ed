import psycopg
import redis
from django.db import InterfaceError, OperationalError, connection

from links.publishing import OUTBOX_CHANNEL, deliver_outbox
from slingshot.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Deliver link changes from the outbox to Redis: woken by NOTIFY, polling as a fallback, "
        "retrying with backoff until Redis takes every change."
    )

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls without a NOTIFY")

    def handle(self, *args, interval, **options):
        listener = None
        failures = 0
        while not self.stopping:
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
                if listener is not None:
                    listener.close()
                self.retry_later(exc, attempt=failures, first=0.2, cap=5.0, who="run_publisher")
                failures += 1
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

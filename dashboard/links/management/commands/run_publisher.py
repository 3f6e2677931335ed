import time

import psycopg
import redis
from django.conf import settings
from django.db import InterfaceError, OperationalError

from links.delivery import OUTBOX_CHANNEL, deliver_outbox
from links.metrics import PublisherMetrics
from slingshot.commands import ServiceCommand
from slingshot.metrics import add_metrics_arguments, serve_metrics

# How long a delivery waits for one under way elsewhere before it asks again.
LOCK_WAIT_MS = 1000


class Command(ServiceCommand):
    help = (
        "Deliver link changes from the outbox to Redis: woken by NOTIFY, polling as a fallback, "
        "retrying with backoff until Redis takes every change."
    )

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls without a NOTIFY")
        parser.add_argument(
            "--coalesce-ms",
            type=float,
            default=20.0,
            help="after a NOTIFY, wait this long so changes committed together go out together",
        )
        parser.add_argument("--log-interval", type=float, default=10.0, help="seconds between progress lines")
        add_metrics_arguments(
            parser,
            port=settings.PUBLISHER_METRICS_PORT,
            address=settings.PUBLISHER_METRICS_ADDRESS,
            setting="PUBLISHER_METRICS_PORT",
        )

    def handle(self, *args, interval, coalesce_ms, log_interval, metrics_port, metrics_address, **options):
        metrics = PublisherMetrics()
        serve_metrics(metrics.registry, port=metrics_port, address=metrics_address, who="run_publisher")
        listener = None
        failures = 0
        published, logged_at = 0, time.monotonic()
        while not self.stopping:
            try:
                if listener is None or listener.closed:
                    listener = self.listen(OUTBOX_CHANNEL)
                # Behind another deliverer (a request delivering its own change), wait for it to end:
                # if Redis failed it, what it held is still to deliver, and no NOTIFY will say so.
                delivered = deliver_outbox(wait_ms=LOCK_WAIT_MS)
                if delivered is None:
                    continue
                metrics.published.inc(delivered)
                published += delivered
                if failures:
                    self.stdout.write("run_publisher: Redis and PostgreSQL reachable again")
                failures = 0
                if published and time.monotonic() - logged_at >= log_interval:
                    self.stdout.write(f"run_publisher: published {published} link changes")
                    published, logged_at = 0, time.monotonic()
                if self.wait_for_notify(listener, interval):
                    self.pause(coalesce_ms / 1000)
                    # What was committed so far goes out in the next delivery: the NOTIFYs it sent meanwhile
                    # would each wake another delivery that finds little or nothing.
                    self.drain(listener)
            except (redis.RedisError, OperationalError, InterfaceError, psycopg.Error) as exc:
                if listener is not None:
                    listener.close()
                metrics.retries.inc()
                self.retry_later(exc, attempt=failures, first=0.2, cap=0.5, who="run_publisher")
                failures += 1
        if listener is not None:
            listener.close()

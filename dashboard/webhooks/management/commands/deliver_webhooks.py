"""`manage.py deliver_webhooks`: sends the teams' webhook messages, retries
them, and makes the events no request makes (docs/webhooks.md). Several
may run: each claims its own messages."""

import time

from django.conf import settings
from django.db import InterfaceError, OperationalError

from slingshot.commands import ServiceCommand
from webhooks.clicks import make_click_messages
from webhooks.delivery import Deliverer, prune_log
from webhooks.watch import make_link_events

# How often links are looked at for link.expired and link.limit_reached, and
# the delivery log pruned (WEBHOOKS_LOG_DAYS).
WATCH_EVERY = 10.0


class Command(ServiceCommand):
    help = "Delivers webhook messages, with retries, until stopped (--once: what is due now)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Deliver what is due now, then stop.")
        parser.add_argument("--poll", type=float, default=0.2, help="Seconds between looks when idle.")

    def handle(self, *args, once: bool = False, poll: float = 0.2, **options):
        deliverer = Deliverer(
            concurrency=settings.WEBHOOKS_CONCURRENCY,
            per_webhook=settings.WEBHOOKS_PER_WEBHOOK,
            timeout=settings.WEBHOOKS_TIMEOUT_SECONDS,
            private_addresses=settings.WEBHOOKS_ALLOW_PRIVATE,
        )
        self.stdout.write("deliver_webhooks: delivering")
        failures, next_watch = 0, 0.0
        try:
            while not self.stopping:
                try:
                    if time.monotonic() >= next_watch:
                        make_link_events()
                        prune_log(settings.WEBHOOKS_LOG_DAYS)
                        next_watch = time.monotonic() + WATCH_EVERY
                    made = make_click_messages()
                    claimed = deliverer.claim() if deliverer.busy() < settings.WEBHOOKS_CONCURRENCY * 4 else 0
                    recorded = deliverer.record(wait=0.05)
                    failures = 0
                except (OperationalError, InterfaceError) as exc:
                    self.retry_later(exc, attempt=failures, first=0.5, cap=10, who="deliver_webhooks")
                    failures += 1
                    continue
                if not (made or claimed or recorded or deliverer.busy()):
                    if once:
                        break
                    self.pause(poll)
        finally:
            deliverer.close()
        self.stdout.write("deliver_webhooks: stopped")

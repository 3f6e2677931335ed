"""`manage.py check_links`: asks each active link's destination whether it
still answers, every LINK_HEALTH_HOURS (health/): a link is due when its
last check is that old, or it has none (a link just made, or given
another destination), so the rounds, ROUND_EVERY apart, check new links
soon after they are made. With LINK_HEALTH_HOURS=0 nothing is checked:
the command waits for its stop. One copy checks at a time (an advisory
lock for the round); another waits its turn."""

import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from health.rounds import check_round
from slingshot.commands import ServiceCommand

ROUND_EVERY = 300.0
LOCK = "slingshot check_links"


class Command(ServiceCommand):
    help = "Checks links' destinations every LINK_HEALTH_HOURS (--once: those due now, then stops)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--once",
            action="store_true",
            help="Check the links due now (with LINK_HEALTH_HOURS=0, every active link), then stop.",
        )

    def handle(self, *args, once: bool = False, **options):
        hours = settings.LINK_HEALTH_HOURS
        if hours <= 0 and not once:
            self.stdout.write("check_links: LINK_HEALTH_HOURS is 0, nothing to check; waiting to be stopped")
            while not self.stopping:
                self.pause(60)
            return
        every = timedelta(hours=hours) if hours > 0 else None
        failures = 0
        while not self.stopping:
            started = time.monotonic()
            try:
                self._round(every)
                failures = 0
            except (OperationalError, InterfaceError) as exc:
                self.retry_later(exc, attempt=failures, first=0.5, cap=30, who="check_links")
                failures += 1
                continue
            if once:
                break
            self.pause(max(1.0, ROUND_EVERY - (time.monotonic() - started)))

    def _round(self, every: timedelta | None) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [LOCK])
            if not cursor.fetchone()[0]:
                self.stdout.write("check_links: another check_links is checking; waiting for the next round")
                return
        stop = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(stop,), daemon=True)
        watcher.start()
        try:
            summary = check_round(every=every, stop=stop)
        finally:
            stop.set()
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [LOCK])
        self.stdout.write(
            f"check_links: {summary.checked} links checked, {summary.broken} broken ({summary.newly_broken} newly)"
        )

    def _watch(self, stop: threading.Event) -> None:
        """Hands a stop signal on to the round's threads."""
        while not stop.wait(0.1):
            if self.stopping:
                stop.set()

"""`manage.py screen_lists`: reads the blocklists of SCREEN_LISTS and the
allowlists of SCREEN_ALLOWLIST now and every SCREEN_REFRESH_MINUTES, for
every door that makes links to look their destinations up (screening/);
then, whenever what they hold changed, flags the links made before whose
destinations they now list (links/flags.py); and every
SCREEN_RELOOKUP_HOURS asks the lookups (Safe Browsing, DNSBLs) about every
active link again."""

import time

from django.conf import settings
from django.db import InterfaceError, OperationalError

from links.flags import flag_listed_links, relookup_links
from screening import screen
from screening.models import ScreenList
from screening.services import refresh_all
from slingshot.commands import ServiceCommand


class Command(ServiceCommand):
    help = "Reads the screening lists now and every SCREEN_REFRESH_MINUTES (--once: now only)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Read the lists once, then stop.")

    def handle(self, *args, once: bool = False, **options):
        failures, flagged_at, looked_up_at = 0, None, float("-inf")
        while not self.stopping:
            started = time.monotonic()
            try:
                rows = refresh_all()
                version = ScreenList.objects.version()
                if version != flagged_at:
                    screen.forget()
                    flagged, cleared = flag_listed_links()
                    self.stdout.write(f"screen_lists: {flagged} links flagged as listed, {cleared} no longer")
                    flagged_at = version
                every = settings.SCREEN_RELOOKUP_HOURS * 3600
                if every > 0 and time.monotonic() - looked_up_at >= every:
                    flagged, cleared = relookup_links()
                    self.stdout.write(f"screen_lists: looked up again: {flagged} links flagged, {cleared} no longer")
                    looked_up_at = time.monotonic()
                failures = 0
            except (OperationalError, InterfaceError) as exc:
                self.retry_later(exc, attempt=failures, first=0.5, cap=30, who="screen_lists")
                failures += 1
                continue
            for row in rows:
                state = f"not read ({row.error})" if row.error else f"{row.entries} entries"
                self.stdout.write(f"screen_lists: {row}: {state}")
            if once:
                break
            self.pause(max(1.0, settings.SCREEN_REFRESH_MINUTES * 60 - (time.monotonic() - started)))

"""The base of Slingshot's long-running management commands (import_clicks,
run_publisher, run_imports): one check of the database as they start, one
way to stop, one way to retry, and one way to be woken by a NOTIFY."""

import signal
import time

import psycopg
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from .schema import SchemaMismatch, check_schema


class ServiceCommand(BaseCommand):
    """SIGTERM and Ctrl-C set `self.stopping`: the command finishes the work
    in hand and returns. `pause` and `retry_later` wake early when it does.

    A service checks the database's schema as it starts, not Django's system
    checks: those ran in the `manage.py migrate` before it (and run in
    `manage.py check`), and would cost each start, and each restart after a
    crash, 0.3 - 0.5 s of CPU (the project's URLs and admin imported)."""

    requires_system_checks = []
    stopping = False

    def execute(self, *args, **options):
        try:
            check_schema(connection)
        except SchemaMismatch as exc:
            raise CommandError(str(exc), returncode=78) from None  # EX_CONFIG: starting again will not help
        self.stopping = False
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            return super().execute(*args, **options)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _stop(self, signum, frame) -> None:
        self.stopping = True

    def pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def retry_later(self, exc: Exception, *, attempt: int, first: float, cap: float, who: str) -> None:
        """After a lost connection: drop the database connection, say so, and
        wait first * 2**attempt seconds (at most cap)."""
        connection.close()
        pause = min(cap, first * 2**attempt)
        self.stderr.write(f"{who}: {exc.__class__.__name__}: {str(exc).strip()}; retrying in {pause:.1f}s")
        self.pause(pause)

    def wait_for_notify(self, listener: psycopg.Connection, seconds: float) -> bool:
        """Sleeps until a NOTIFY on the listener's channel, for at most
        `seconds`, waking at least twice a second to see whether it should stop."""
        deadline = time.monotonic() + seconds
        while not self.stopping and (left := deadline - time.monotonic()) > 0:
            if any(True for _ in listener.notifies(timeout=min(left, 0.5), stop_after=1)):
                return True
        return False

    @staticmethod
    def drain(listener: psycopg.Connection) -> None:
        """Consumes the NOTIFYs already received, without waiting."""
        for _ in listener.notifies(timeout=0):
            pass

    @staticmethod
    def listen(channel: str) -> psycopg.Connection:
        """A connection of its own to the database (Django's takes part in
        transactions), listening on `channel`."""
        db = connection.settings_dict
        listener = psycopg.connect(
            host=db["HOST"],
            port=db["PORT"] or None,
            user=db["USER"],
            password=db["PASSWORD"],
            dbname=db["NAME"],
            autocommit=True,
        )
        listener.execute(f"LISTEN {channel}")
        return listener

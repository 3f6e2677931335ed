"""Moves the clicks and orphan visits PostgreSQL holds to the ClickHouse
cluster (clicks.clickhouse_move), a chunk a transaction, each once; run it
again after a stop and it goes on where it stopped."""

from django.conf import settings
from django.core.management.base import CommandError
from django.db import InterfaceError, OperationalError, connection

from clicks.clickhouse_clicks import ClickHouseUnavailable, using_clickhouse
from clicks.clickhouse_move import CHUNK, TABLES, MoveError, begin, estimate_left, left_before_the_mark, move_chunk
from clicks.retention import teams_keeping_visits_for
from slingshot.commands import ServiceCommand
from teams.models import RETENTION_DAYS_MIN_CLICKHOUSE

LOCK = "slingshot move_clicks"


class Command(ServiceCommand):
    help = (
        "Move the clicks and orphan visits stored in PostgreSQL to the ClickHouse cluster (CLICK_STORE=clickhouse), "
        "each once; stopped, it goes on where it stopped when run again."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--rows",
            type=int,
            default=CHUNK,
            help=f"rows a transaction (default {CHUNK}); a move that began keeps the size it began with",
        )
        parser.add_argument(
            "--give-up-after",
            type=float,
            default=300.0,
            help="seconds to keep retrying while the cluster or the database does not answer (default 300)",
        )

    def handle(self, *args, rows: int, give_up_after: float, **options):
        if not using_clickhouse():
            raise CommandError(
                "CLICK_STORE is not clickhouse: set CLICK_STORE=clickhouse and CLICKHOUSE_URLS, and restart the "
                "importers with them, so that no click goes on into PostgreSQL, then move the clicks"
            )
        if rows < 1:
            raise CommandError("--rows must be at least 1")
        if not settings.CLICKHOUSE_URLS:
            raise CommandError("no ClickHouse node: set CLICKHOUSE_URLS")
        if keeping := teams_keeping_visits_for():
            raise CommandError(
                f"{', '.join(keeping[:5])}{' and others' if len(keeping) > 5 else ''} keep visits only so many days, "
                "which a move does not purge on the way: set their visit retention to none while the clicks move "
                "(their team's page, or PATCH /api/v1/teams/{id} with visit_retention_days null), and again once "
                f"they are in ClickHouse (at least {RETENTION_DAYS_MIN_CLICKHOUSE} days there); nothing was moved"
            )
        self._lock()
        try:
            totals = {table.name: self._move(table, rows=rows, give_up_after=give_up_after) for table in TABLES}
        finally:
            self._unlock()
        if self.stopping:
            self.stdout.write("move_clicks: stopped; run it again to go on")
            return
        self.stdout.write(
            f"move_clicks: moved {totals['clicks']:,} clicks and {totals['orphan_visits']:,} orphan visits; "
            "none are left in PostgreSQL"
        )

    def _move(self, table, *, rows: int, give_up_after: float) -> int:
        chunk = begin(table, rows=rows)
        if chunk != rows:
            self.stdout.write(f"move_clicks: {table.name}: chunks of {chunk:,} rows, as its move began")
        about = estimate_left(table)
        moved = failures = 0
        waited = 0.0
        again = True  # the first chunk may be one a stopped run inserted and did not commit
        while not self.stopping:
            try:
                done = move_chunk(table, again=again)
            except MoveError as exc:
                raise CommandError(f"{table.name}: {exc}; nothing of that chunk moved") from exc
            except (ClickHouseUnavailable, OperationalError, InterfaceError) as exc:
                if waited >= give_up_after:
                    raise CommandError(
                        f"{table.name}: gave up after {waited:.0f}s: {exc}; run move_clicks again to go on"
                    ) from exc
                pause = min(10.0, 0.5 * 2**failures)
                self.stderr.write(
                    f"move_clicks: {exc.__class__.__name__}: {str(exc).strip()}; retrying in {pause:.1f}s"
                )
                self.pause(pause)
                failures, waited = failures + 1, waited + pause
                if not isinstance(exc, ClickHouseUnavailable):
                    connection.close()  # and the lock with it: taken again on the new connection
                    self._lock()
                again = True
                continue
            failures, waited, again = 0, 0.0, False
            if done:
                moved += done
                self.stdout.write(f"move_clicks: {table.name}: {moved:,} moved (of about {max(about, moved):,})")
            elif not left_before_the_mark(table):
                break
        return moved

    def _lock(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [LOCK])
            if not cursor.fetchone()[0]:
                raise CommandError("another move_clicks is moving clicks; this one stops here")

    def _unlock(self) -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [LOCK])
        except (OperationalError, InterfaceError):
            pass  # the connection that held it is gone, and the lock with it

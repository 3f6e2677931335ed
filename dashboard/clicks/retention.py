"""A team's visits past its retention (Team.visit_retention_days): its raw
clicks from before the UTC day that many days back deleted, and with
CLICK_RETENTION_ROLLUPS=purge the rollups of those hours, days and whole
months too. The importer's upkeep runs it every CLICK_PURGE_EVERY_MINUTES
(import_clicks); so can `manage.py purge_visits`. With CLICK_STORE=clickhouse
the cluster deletes them (clickhouse_retention.py).

A purge deletes CLICK_PURGE_BATCH_ROWS rows a transaction, rows an import
or a fold holds skipped for the next purge, so that neither waits long for
it; one runs at a time (an advisory lock), and running it again deletes
what is left, no more. Each transaction records what the accounting counted
of what it deleted (deletions.py). A team's purge is in its audit log, the
entry written with the purge's last transaction."""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from django.conf import settings
from django.db import connection, transaction

from teams.audit import record
from teams.models import Action, Team

from .clickhouse_clicks import using_clickhouse
from .clickhouse_retention import earliest_cutoff, idle_shards, team_purge
from .deletions import team_clicks_purge, team_rollups_purge
from .rollups import PURGED_ROLLUPS

log = logging.getLogger(__name__)

_LOCK = "hashtextextended('slingshot retention purge', 0)"


@dataclass
class Purge:
    team_id: int
    cutoff: datetime  # what was before it went
    clicks: int = 0  # raw clicks deleted
    rollup_rows: int = 0  # rows of the rollups deleted (CLICK_RETENTION_ROLLUPS=purge)


@dataclass
class PurgeRun:
    purges: list[Purge]  # the teams it deleted anything of
    # Where it stopped at its budget, to go on from: a team's id and the
    # step it was at (_steps); None: it finished.
    go_on_from: tuple[int, int] | None = None

    @property
    def finished(self) -> bool:
        return self.go_on_from is None


def teams_keeping_visits_for() -> list[str]:
    """'<team> (N days)' of each team with a retention, by name."""
    teams = Team.objects.filter(visit_retention_days__isnull=False).order_by("name")
    return [f"{name} ({days} days)" for name, days in teams.values_list("name", "visit_retention_days")]


def retention_cutoff(now: datetime, days: int) -> datetime:
    """The first instant a team keeps: the UTC midnight `days` days before today's."""
    today = now.astimezone(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=days)


def visits_purge(
    *,
    now: datetime | None = None,
    rollups: str | None = None,
    rows: int | None = None,
    budget: int | None = None,
    go_on_from: tuple[int, int] | None = None,
) -> PurgeRun:
    """Purges every team with a retention, in id order from where an
    earlier run stopped (`go_on_from`), `rows` rows a transaction (default
    CLICK_PURGE_BATCH_ROWS), the rollups too when `rollups` (default
    CLICK_RETENTION_ROLLUPS) is 'purge'; at most `budget` transactions
    (None: until done), after which the run says where to go on from.
    Another purge running: does nothing."""
    now = now or datetime.now(timezone.utc)
    rollups = rollups or settings.CLICK_RETENTION_ROLLUPS
    rows = rows or settings.CLICK_PURGE_BATCH_ROWS
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_try_advisory_lock({_LOCK})")
        if not cursor.fetchone()[0]:
            return PurgeRun(purges=[])
    try:
        if using_clickhouse():
            return PurgeRun(purges=_clickhouse_purges(now, rollups=rollups == "purge"))
        purges = []
        first_team, first_step = go_on_from or (0, 0)
        teams = Team.objects.filter(visit_retention_days__isnull=False, id__gte=first_team).order_by("id")
        for team_id, days in teams.values_list("id", "visit_retention_days"):
            purge = Purge(team_id=team_id, cutoff=retention_cutoff(now, days))
            step = first_step if team_id == first_team else 0
            step, budget = _team_purge(purge, step=step, rows=rows, rollups=rollups == "purge", budget=budget)
            if purge.clicks or purge.rollup_rows:
                purges.append(purge)
                log.info(
                    "purged team %d's visits before %s: %d clicks, %d rows of rollups",
                    team_id,
                    purge.cutoff.date(),
                    purge.clicks,
                    purge.rollup_rows,
                )
            if budget == 0 and step is not None:
                return PurgeRun(purges=purges, go_on_from=(team_id, step))
        return PurgeRun(purges=purges)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_unlock({_LOCK})")


def _clickhouse_purges(now: datetime, *, rollups: bool) -> list[Purge]:
    """Each team's purge with clicks in ClickHouse (clickhouse_retention.py):
    its mutations sent, and its audit log entry with what they delete."""
    shards = idle_shards()
    if not shards:
        return []
    purges = []
    teams = Team.objects.filter(visit_retention_days__isnull=False).order_by("id")
    try:
        for team_id, days in teams.values_list("id", "visit_retention_days"):
            purge = Purge(team_id=team_id, cutoff=earliest_cutoff(now, retention_cutoff(now, days)))
            purge.clicks, purge.rollup_rows = team_purge(team_id, purge.cutoff, rollups=rollups, on=shards)
            if purge.clicks or purge.rollup_rows:
                purges.append(purge)
                _record(purge, rollups=rollups)
                log.info(
                    "purging team %d's visits before %s in ClickHouse: %d clicks, %d rows of rollups",
                    team_id,
                    purge.cutoff.date(),
                    purge.clicks,
                    purge.rollup_rows,
                )
    finally:
        for shard in shards:
            shard.client.disconnect()
    return purges


def _record(purge: Purge, *, rollups: bool) -> None:
    """The team's audit log entry of its purge."""
    changes = {"visits": [purge.clicks, 0]}
    if rollups:
        changes["rollup_rows"] = [purge.rollup_rows, 0]
    record(
        team_id=purge.team_id,
        actor=None,
        action=Action.VISITS_PURGED,
        subject=f"visits before {purge.cutoff:%Y-%m-%d}",
        changes=changes,
    )


def _steps(purge: Purge, *, rows: int, rollups: bool) -> list[Callable]:
    """Each a transaction's worth of deleting: how many rows it deleted."""
    where = {"team_id": purge.team_id, "cutoff": purge.cutoff, "rows": rows}

    def clicks(cursor) -> int:
        gone = team_clicks_purge(cursor, **where)
        purge.clicks += gone
        return gone

    def rollup(table: str) -> Callable:
        def step(cursor) -> int:
            gone = team_rollups_purge(cursor, table=table, **where)
            purge.rollup_rows += gone
            return gone

        return step

    return [clicks, *(rollup(table) for table, _, _ in PURGED_ROLLUPS if rollups)]


def _team_purge(
    purge: Purge, *, step: int, rows: int, rollups: bool, budget: int | None
) -> tuple[int | None, int | None]:
    """Runs a team's steps from `step` on until each deletes less than
    `rows` or the budget is spent; the step it stopped at (None: it
    finished), and the budget left."""
    steps = _steps(purge, rows=rows, rollups=rollups)
    while step < len(steps) and budget != 0:
        with transaction.atomic(), connection.cursor() as cursor:
            if steps[step](cursor) < rows:
                step += 1
            budget = None if budget is None else budget - 1
            if (step == len(steps) or budget == 0) and (purge.clicks or purge.rollup_rows):
                _record(purge, rollups=rollups)
    return (None if step >= len(steps) else step), budget

"""Importers benchmark: `make bench-importers`.

Starts its own PostgreSQL and Redis (durable, as bench_import.py's), writes
a YOURLS database dump of `--visits` logged clicks over `--links` links
(testing/sources.py: a year of visits, Zipf-skewed over the links, agents,
addresses, referrers and countries from pools), and times `manage.py
import_links yourls` on it, as the command runs it (importers/jobs.py
job_run, the progress bar off): the links, then every visit enriched and
stored through the click importer's store step with its rollups. Then a
second run of the same dump, which stores nothing.

Beside it, in the same run and back to back, the ceiling it is measured
against: the dump's log rows only read and parsed (no enrichment, no
database), so that a figure holds across machines as a ratio.

    flock /tmp/slingshot-bench.lock .venv/bin/python loadtest/bench_importers.py [--visits 1000000] [--links 10000]
                                                                                 [--statements] [--profile]
"""

import argparse
import contextlib
import os
import resource
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard"), str(REPO / "loadtest")]

from bench_import import tune_postgres  # noqa: E402
from bench_import_meters import CpuMeter, StatementTimes  # noqa: E402

from devstack.throwaway import ThrowawayStack  # noqa: E402


def write_dump(directory: Path, *, visits: int, links: int, seed: int = 1) -> Path:
    from testing.sources import write_yourls_dump, yourls_data

    return write_yourls_dump(directory / "yourls.sql", yourls_data(links=links, visits=visits, seed=seed))


def parse_only(dump: Path) -> int:
    """The ceiling: every log row of the dump read and parsed, nothing else."""
    from importers.sources.yourls import LOG_COLUMNS, dump_rows

    return sum(1 for _ in dump_rows(lambda: dump.open("rb"), "yourls_log", LOG_COLUMNS))


class Phases:
    """When each phase of a run began (the progress the command's bar shows)."""

    def __init__(self):
        self.began: dict[str, float] = {}

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        self.began.setdefault(phase, time.perf_counter())

    def lines(self, started: float, ended: float) -> str:
        marks = sorted(self.began.items(), key=lambda item: item[1])
        ends = [moment for _, moment in marks[1:]] + [ended]
        first = marks[0][1] if marks else ended
        spans = [f"before the first {marks[0][0]} {first - started:.1f}s"] if marks else []
        return ", ".join(spans + [f"{name} {end - began:.1f}s" for (name, began), end in zip(marks, ends, strict=True)])


def import_dump(dump: Path, *, username: str, team_id: int, name: str = "bench", progress=None):
    """`manage.py import_links yourls DUMP` as the command runs it; its Summary."""
    from django.contrib.auth import get_user_model

    from importers.files import path_opener
    from importers.jobs import job_create, job_lock, job_run, job_unlock
    from teams.models import Team

    job = job_create(
        owner=get_user_model().objects.get(username=username),
        team=Team.objects.get(pk=team_id),
        source="yourls",
        options={"name": name},
    )
    job_lock(job)
    try:
        return job_run(job, progress=progress, opener=lambda kind: path_opener(str(dump)) if kind == "sql" else None)
    finally:
        job_unlock(job)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--visits", type=int, default=1_000_000)
    parser.add_argument("--links", type=int, default=10_000)
    parser.add_argument("--profile", action="store_true", help="cProfile the import, top 25 by own time")
    parser.add_argument("--statements", action="store_true", help="time each SQL statement of the import")
    args = parser.parse_args()

    stack = ThrowawayStack(prefix="slingshot-bench-importers-", durable=True)
    try:
        stack.start()
        tune_postgres(stack, ["shared_buffers=2GB", "max_wal_size=4GB"])
        os.environ.update(
            {**stack.environment(), "DJANGO_SETTINGS_MODULE": "slingshot.settings", "LOG_LEVEL": "WARNING"}
        )
        run_bench(args, stack)
    finally:
        stack.cleanup()


def fold_as_live() -> None:
    """Moves the day fold's mark to where a running importer keeps it, so
    that every visit of the dump's year is a late click, as in an import
    into a live stack: its day and six-hour rows are added with its hours."""
    from clicks.rollups import FOLD_AFTER, fold_days

    fold_days(until=datetime.now(timezone.utc) - FOLD_AFTER)


def stored_counts(*, team_id: int) -> dict[str, int]:
    """The team's visits stored, and counted in its totals and in each
    rollup table, once the hours since the fold's mark are folded too, into
    the next day: the month breakdowns hold the days the fold went past."""
    from django.db import connection

    from clicks.rollups import fold_days

    fold_days(until=datetime.now(timezone.utc).replace(hour=0, minute=0, second=0) + timedelta(days=1, hours=1))
    # Each rollup table by the rows it counts every click in once: every
    # click has one value of `browser` in each breakdown table.
    tables = {
        "link_click_totals": "",
        "click_rollup_hour": "",
        "click_rollup_6h": "",
        "click_rollup_day": "",
        **{f"click_breakdown_{grain}": " AND dimension = 'browser'" for grain in ("hour", "day", "month")},
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM clicks c JOIN links_link l ON l.id = c.link_id WHERE l.team_id = %(team)s), "
            + ", ".join(
                f"(SELECT coalesce(sum(r.clicks), 0) FROM {table} r JOIN links_link l ON l.id = r.link_id"
                f" WHERE l.team_id = %(team)s{where})"
                for table, where in tables.items()
            ),
            {"team": team_id},
        )
        return dict(zip(["clicks", *tables], cursor.fetchone(), strict=True))


def run_bench(args, stack: ThrowawayStack) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from clicks.importer import tune_gc

    call_command("migrate", verbosity=0)
    fold_as_live()
    tune_gc()  # as the commands do
    person = get_user_model().objects.create_user("bench")
    with tempfile.TemporaryDirectory(prefix="slingshot-bench-importers-") as directory:
        started = time.perf_counter()
        dump = write_dump(Path(directory), visits=args.visits, links=args.links)
        print(
            f"bench-importers: a YOURLS dump of {args.visits:,} visits over {args.links:,} links "
            f"({dump.stat().st_size / 2**20:,.0f} MiB, written in {time.perf_counter() - started:.1f}s); "
            "PostgreSQL fsync on, synchronous_commit on, shared_buffers=2GB"
        )
        started = time.perf_counter()
        parsed = parse_only(dump)
        ceiling = time.perf_counter() - started
        print(f"  ceiling (the log parsed, nothing stored): {parsed:,} rows in {ceiling:.1f}s")

        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        meter = CpuMeter(stack)
        meter.start()
        started = time.perf_counter()
        phases = Phases()
        timings = StatementTimes(connection)
        with connection.execute_wrapper(timings) if args.statements else contextlib.nullcontext():
            summary = import_dump(dump, username=person.username, team_id=person.personal_team.pk, progress=phases)
        elapsed = time.perf_counter() - started
        phase_lines = phases.lines(started, started + elapsed)
        cpu = meter.stop()
        timings.print()
        if profiler:
            import pstats

            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        counts = stored_counts(team_id=person.personal_team.pk)
        assert set(counts.values()) == {args.visits} == {summary.visits_stored}, (counts, summary)
        print(
            f"  import: {summary.links_created:,} links and {summary.visits_stored:,} visits in {elapsed:.1f}s = "
            f"{summary.visits_stored / elapsed:,.0f} visits/s, {elapsed / ceiling:.1f}x the ceiling "
            f"(target: 1,000,000 in under 60 s)"
        )
        print(f"  import: its phases (the first report of each to the next's): {phase_lines}")
        print(f"  import: {cpu}; peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB resident")

        started = time.perf_counter()
        again = import_dump(dump, username=person.username, team_id=person.personal_team.pk)
        elapsed = time.perf_counter() - started
        assert again.visits_stored == 0 and again.links_created == 0, again
        print(
            f"  second run: {again.visits_read:,} visits read, none stored, in {elapsed:.1f}s "
            f"({elapsed / ceiling:.1f}x the ceiling)"
        )
    connection.close()


if __name__ == "__main__":
    main()

"""Import jobs (importers.models.ImportJob): made by `manage.py
import_links`, which runs its own in the foreground, or by the Import page,
whose jobs `manage.py run_imports` works in the background.

Whoever runs a job holds a PostgreSQL advisory lock on it for as long as
its session lives, so that no job runs twice at once; a worker holds its
team's too, so that a team's background jobs run one at a time, and a
worker's other threads (run_imports --jobs) run other teams' jobs
meanwhile: one team's long import never holds another's up. A worker that dies
(killed, its host gone, its connection lost) lets the lock go with its
session; the next worker to look takes the job over and goes on from the
visits its progress says were stored (importers/runner.py). Nothing is
lost and nothing stored twice, as every step of a run may be done again.
A job the command ran and that was interrupted is marked so, to be run
again by its command.

A job's secret and files are kept until it ends; those of a dry run, which
the page may turn into the import itself, for a day at most.
"""

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import psycopg
import redis
from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.utils.dateparse import parse_datetime

from links.models import Domain
from slingshot.errors import StoreUnavailable
from teams import access
from teams.models import Role, Team

from .files import Opener, files_forget, stored_opener
from .models import ImportJob, Source, State
from .runner import ImportRun, Summary
from .secrets import seal, unseal
from .signals import import_finished
from .sources import SourceError, source_for

log = logging.getLogger(__name__)

CHANNEL = "slingshot_import_jobs"
# A connection to PostgreSQL or Redis lost mid-run: the job is left where it
# got, and whoever runs it again goes on from there.
# Failures of the moment: the job is interrupted, and goes on when run again (the click store's cluster away too).
RETRYABLE = (
    redis.RedisError,
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    StoreUnavailable,
)
INTERRUPTED = "Interrupted: run the command again; it goes on, storing nothing twice."
DRY_RUN_KEPT = timedelta(days=1)
PROGRESS_EVERY = 1.0  # seconds between writes of a running job's progress


def job_create(
    *,
    owner,
    team: Team,
    source: str,
    options: dict | None = None,
    secret: str = "",
    domain: Domain | None = None,
    dry_run: bool = False,
    background: bool = False,
) -> ImportJob:
    """A new job, which reads its source as it stands now. The owner must be
    an editor of the team (PermissionDenied). A background job wakes the
    workers when the transaction commits."""
    access.require(owner, team.pk, Role.EDITOR, to="import links")
    if source not in Source.values:
        raise ValueError(f"no source {source!r}")
    job = ImportJob.objects.create(
        owner=owner,
        team=team,
        source=source,
        domain=domain,
        options={**(options or {}), "until": datetime.now(timezone.utc).isoformat()},
        secret=seal(secret),
        dry_run=dry_run,
        background=background,
    )
    if background:
        transaction.on_commit(wake_workers)
    return job


def wake_workers() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, '')", [CHANNEL])


def job_import_for_real(job: ImportJob) -> ImportJob:
    """Queues again a finished background dry run, as the import itself."""
    updated = ImportJob.objects.filter(pk=job.pk, dry_run=True, state=State.DONE, background=True).update(
        dry_run=False, state=State.QUEUED, progress={}, summary={}, error="", started_at=None, finished_at=None
    )
    if not updated:
        raise ValueError("only a finished dry run of the Import page can be imported")
    transaction.on_commit(wake_workers)
    job.refresh_from_db()
    return job


# --- the locks ----------------------------------------------------------------------------


def _try_lock(key: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [key])
        return cursor.fetchone()[0]


def _unlock(key: str) -> None:
    if connection.connection is None or connection.connection.closed:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key])


def _team_key(job: ImportJob) -> str:
    return f"slingshot import team {job.team_id}"


def job_lock(job: ImportJob) -> bool:
    return _try_lock(f"slingshot import job {job.pk}")


def job_unlock(job: ImportJob) -> None:
    """Lets the job go, and its team's lock with a background job's (job_claim)."""
    _unlock(f"slingshot import job {job.pk}")
    if job.background:
        _unlock(_team_key(job))


def job_claim() -> ImportJob | None:
    """The oldest background job waiting or left running by a worker that
    died, of a team none of whose jobs runs now, locked for this session
    with its team; None if there is none. A foreground job whose command is
    gone is marked interrupted on the way."""
    for job in ImportJob.objects.filter(state__in=[State.QUEUED, State.RUNNING]).order_by("id"):
        if job.background and not _try_lock(_team_key(job)):
            continue  # the team's other job runs: this one waits for it
        if not job_lock(job):
            if job.background:
                _unlock(_team_key(job))
            continue
        job.refresh_from_db()
        if job.background and not job.finished:
            return job
        if not job.background and job.state == State.RUNNING:
            _finish(job, State.FAILED, error=INTERRUPTED)
        job_unlock(job)
    return None


def jobs_forget_dry_runs(*, now: datetime | None = None) -> int:
    """Empties the secret and files of dry runs finished a day ago or more."""
    now = now or datetime.now(timezone.utc)
    stale = ImportJob.objects.filter(dry_run=True, finished_at__lt=now - DRY_RUN_KEPT).filter(
        ~Q(secret=b"") | Q(files__isnull=False)
    )
    count = 0
    for job in stale.distinct():
        _forget(job)
        count += 1
    return count


# --- a run -------------------------------------------------------------------------------


def job_run(
    job: ImportJob,
    *,
    progress: Callable[[str, int, int | None], None] | None = None,
    opener: Callable[[str], Opener | None] | None = None,
) -> Summary:
    """Runs the job to its end in this process, which holds its lock
    (job_lock). Raises SourceError or PermissionDenied, with the job marked
    failed, when the source cannot be read or the owner may not import; a
    lost database or Redis propagates with the job left running, for a
    worker (or the command run again) to go on with."""
    ImportJob.objects.filter(pk=job.pk).update(
        state=State.RUNNING, started_at=job.started_at or datetime.now(timezone.utc)
    )
    job.state = State.RUNNING
    written = 0.0

    def report(phase: str, done: int, total: int | None) -> None:
        nonlocal written
        job.progress.update(phase=phase, done=done, total=total)
        if progress:
            progress(phase, done, total)
        if time.monotonic() - written >= PROGRESS_EVERY:
            ImportJob.objects.filter(pk=job.pk).update(progress=job.progress)
            written = time.monotonic()

    try:
        source = source_for(
            job.source,
            options=job.options,
            secret=unseal(job.secret),
            opener=opener or (lambda name: stored_opener(job, name)),
            until=parse_datetime(job.options["until"]),
        )
        try:
            summary = ImportRun(job=job, source=source, progress=report).run()
        finally:
            source.close()
    except (SourceError, PermissionDenied) as exc:
        _finish(job, State.FAILED, error=str(exc))
        raise
    _finish(job, State.DONE, summary=summary)
    return summary


def job_fail(job: ImportJob, error: str) -> None:
    """Marks a job failed for a reason of this code's (logged with its traceback by the caller)."""
    _finish(job, State.FAILED, error=error)


def _finish(job: ImportJob, state: str, *, summary: Summary | None = None, error: str = "") -> None:
    job.state, job.error = state, error
    job.summary = summary.as_dict() if summary else job.summary
    job.finished_at = datetime.now(timezone.utc)
    fields = ["state", "error", "summary", "finished_at", "progress"]
    with transaction.atomic():
        job.save(update_fields=fields)
        if not job.dry_run:
            import_finished.send(sender=ImportJob, team_id=job.team_id, summary=finished_summary(job))
    if not (job.dry_run and state == State.DONE and job.background):
        _forget(job)


def finished_summary(job: ImportJob) -> dict:
    """What an import.finished event says of the job: its id, source, state and summary."""
    return {
        "id": job.pk,
        "source": job.source,
        "state": job.state,
        "error": job.error,
        "summary": job.summary,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


def _forget(job: ImportJob) -> None:
    ImportJob.objects.filter(pk=job.pk).update(secret=b"")
    files_forget(job)

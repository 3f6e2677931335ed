import logging
import threading

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import connections

from importers.jobs import CHANNEL, RETRYABLE, job_claim, job_fail, job_run, job_unlock, jobs_forget_dry_runs
from importers.sources import SourceError
from slingshot.commands import ServiceCommand

log = logging.getLogger(__name__)


class Command(ServiceCommand):
    help = (
        "Work the imports the Import page queued (importers/jobs.py), woken by NOTIFY: jobs of different teams "
        "at once, in threads, a team's one at a time; a job whose worker died is taken over where it got. "
        "Several may run at once."
    )

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=5.0, help="seconds between looks without a NOTIFY")
        parser.add_argument("--once", action="store_true", help="work the jobs waiting now, then return")
        parser.add_argument(
            "--jobs",
            type=int,
            default=settings.IMPORTERS_WORKER_JOBS,
            help="jobs (of different teams) worked at once (default IMPORTERS_WORKER_JOBS)",
        )

    def handle(self, *args, interval, once, jobs, **options):
        """Runs `work` in `jobs` threads, each with connections of its own
        (so each holds the locks of the job it runs), until told to stop;
        the first error a thread does not handle stops them all and is raised."""
        failed: list[BaseException] = []

        def thread() -> None:
            try:
                self.work(interval=interval, once=once)
            except BaseException as exc:
                failed.append(exc)
                self.stopping = True
            finally:
                connections.close_all()

        threads = [threading.Thread(target=thread, name=f"run_imports-{n}") for n in range(max(1, jobs))]
        for worker in threads:
            worker.start()
        for worker in threads:
            while worker.is_alive():
                worker.join(timeout=0.5)  # a short wait, so that this thread takes SIGTERM at once
        if failed:
            raise failed[0]

    def work(self, *, interval: float, once: bool) -> None:
        listener, failures = None, 0
        while not self.stopping:
            try:
                if listener is None and not once:
                    listener = self.listen(CHANNEL)
                worked = self.work_one()
                jobs_forget_dry_runs()
                failures = 0
                if worked:
                    continue
                if once:
                    return
                self.wait_for_notify(listener, interval)
            except RETRYABLE as exc:
                if listener is not None:
                    listener.close()
                    listener = None
                self.retry_later(exc, attempt=failures, first=0.5, cap=30, who="run_imports")
                failures += 1
        if listener is not None:
            listener.close()

    def work_one(self) -> bool:
        """Runs the next job to its end; False if none waits."""
        job = job_claim()
        if job is None:
            return False
        self.stdout.write(f"run_imports: {job} started")
        try:
            summary = job_run(job)
        except (SourceError, PermissionDenied) as exc:
            self.stdout.write(f"run_imports: {job} failed: {exc}")
        except RETRYABLE:
            raise  # left running: taken over after the retry, from where it got
        except Exception as exc:
            log.exception("run_imports: %s failed", job)
            job_fail(job, f"The import stopped on an error of Slingshot's ({exc.__class__.__name__}); it is logged.")
        else:
            self.stdout.write(f"run_imports: {job} done: {'; '.join(summary.lines()[:3])}")
        finally:
            job_unlock(job)
        return True

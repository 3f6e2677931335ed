"""The Import page's worker (`manage.py run_imports`, importers/jobs.py):
jobs of different teams run at once, a team's one after the other, so
that one team's long import never holds another's up."""

import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from importers.files import files_store
from importers.jobs import job_create
from importers.models import ImportJob
from teams.services import team_create
from testing.factories import fresh

from .servers import ApiServer

pytestmark = pytest.mark.django_db(transaction=True)

DUMP = Path(__file__).parent / "data" / "yourls-1.10.sql"
KEY = "kutt-test-key"


def yourls_job(user, team) -> ImportJob:
    job = job_create(owner=user, team=team, source="yourls", options={"name": fresh("y")}, background=True)
    files_store(job, {"sql": [DUMP.read_bytes()]})
    return job


def test_a_slow_import_of_one_team_holds_up_no_other_teams(user, team):
    other_team = team_create(actor=user, name=fresh("team-"))
    released = threading.Event()

    def slow_kutt(path: str, query: dict):
        released.wait(timeout=60)  # a server that answers only once the test lets it
        return 200, {"data": [], "total": 0}

    with ApiServer(slow_kutt, header="X-API-KEY", secret=KEY) as server:
        slow = job_create(
            owner=user, team=team, source="kutt", options={"url": server.url}, secret=KEY, background=True
        )
        after = yourls_job(user, team)  # the same team's: it waits for the slow one
        other = yourls_job(user, other_team)
        seen: dict[int, str] = {}

        def watch() -> None:
            """Once the other team's import has ended, what each job is doing; then the slow one may go on."""
            deadline = time.monotonic() + 60
            while not ImportJob.objects.get(pk=other.pk).finished and time.monotonic() < deadline:
                time.sleep(0.05)
            seen.update(ImportJob.objects.filter(pk__in=[slow.pk, after.pk, other.pk]).values_list("pk", "state"))
            released.set()
            connection.close()

        watcher = threading.Thread(target=watch)
        watcher.start()
        call_command("run_imports", "--once", "--jobs", "3")
        watcher.join()

    assert seen == {slow.pk: "running", after.pk: "queued", other.pk: "done"}
    jobs = {job.pk: job for job in ImportJob.objects.filter(pk__in=[slow.pk, after.pk, other.pk])}
    assert {job.state for job in jobs.values()} == {"done"}
    assert jobs[other.pk].finished_at < jobs[slow.pk].finished_at <= jobs[after.pk].started_at
    assert jobs[other.pk].summary["links_created"] == 3

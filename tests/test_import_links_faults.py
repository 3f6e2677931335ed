"""`manage.py import_links` losing PostgreSQL mid-run, against a real
PostgreSQL: the command says so in a sentence, the job is marked
interrupted, and running it again stores the rest, every visit once."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from devstack.net import free_port
from importers.jobs import INTERRUPTED
from importers.models import ImportJob, State
from testing.factories import make_user
from testing.fixtures import database_url
from testing.sources import write_yourls_dump, yourls_data

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parent.parent
VISITS, LINKS = 100_000, 500
APPLICATION = "slingshot-import-links-fault"


def command(dump: Path, username: str) -> list[str]:
    manage = str(REPO / "dashboard" / "manage.py")
    return [sys.executable, manage, "import_links", "yourls", str(dump), "--user", username, "--no-progress"]


def import_links(dump: Path, username: str) -> subprocess.Popen:
    return subprocess.Popen(
        command(dump, username),
        env={**os.environ, "DATABASE_URL": f"{database_url()}?application_name={APPLICATION}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stored(team_id: int) -> tuple[int, int, int]:
    """The team's visits: rows, distinct click ids, and the sum of its totals."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(DISTINCT c.click_id) FROM clicks c JOIN links_link l ON l.id = c.link_id"
            " WHERE l.team_id = %s",
            [team_id],
        )
        rows, distinct = cursor.fetchone()
        cursor.execute(
            "SELECT coalesce(sum(t.clicks), 0) FROM link_click_totals t JOIN links_link l ON l.id = t.link_id"
            " WHERE l.team_id = %s",
            [team_id],
        )
        return rows, distinct, int(cursor.fetchone()[0])


@pytest.mark.slow
def test_postgresql_lost_mid_visits_is_a_sentence_and_a_second_run_stores_the_rest(tmp_path):
    person = make_user()
    team = person.personal_team.pk
    dump = write_yourls_dump(tmp_path / "yourls.sql", yourls_data(links=LINKS, visits=VISITS, seed=7))

    first = import_links(dump, person.username)
    deadline = time.monotonic() + 120
    while stored(team)[0] == 0:
        assert first.poll() is None, f"the import ended before any visit was stored:\n{first.stdout.read()}"
        assert time.monotonic() < deadline, "no visit stored in 120 s"
        time.sleep(0.02)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", [APPLICATION]
        )
        assert cursor.fetchall(), "the import's session was not found"
    out, _ = first.communicate(timeout=60)
    part = stored(team)[0]

    assert first.returncode == 1, out
    assert "Traceback" not in out, out
    # PostgreSQL's reason depends on what the session was doing when it
    # ended: "terminating connection due to administrator command", or
    # psycopg's "consuming input failed: server closed the connection ...".
    assert re.search(
        r"CommandError: import #\d+ stopped: the connection to PostgreSQL was lost \([^\n]+\)\. "
        r"Run the command again; it goes on, storing nothing twice\.\n\Z",
        out,
    ), out
    assert 0 < part < VISITS
    job = ImportJob.objects.filter(owner=person).get()
    assert (job.state, job.error) == (State.FAILED, INTERRUPTED)
    assert job.finished_at is not None

    again = import_links(dump, person.username)
    out, _ = again.communicate(timeout=300)
    assert again.returncode == 0, out
    assert stored(team) == (VISITS, VISITS, VISITS)
    assert ImportJob.objects.filter(owner=person, state=State.DONE).count() == 1


def test_postgresql_not_there_is_a_sentence(tmp_path):
    dump = write_yourls_dump(tmp_path / "yourls.sql", yourls_data(links=5, visits=10))
    closed = f"postgres://nobody:nothing@127.0.0.1:{free_port()}/slingshot"
    done = subprocess.run(
        command(dump, "anyone"),
        env={**os.environ, "DATABASE_URL": closed},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "CommandError: the connection to PostgreSQL failed (" in done.stderr
    assert done.stderr.rstrip().endswith("). Run the command again once it answers; it stores nothing twice.")

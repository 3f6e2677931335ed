"""Requests while PostgreSQL restarts, against a stack of the test's own
(PostgreSQL, Redis, the dashboard under gunicorn and the publisher, as
`make run` runs them; the test run's PostgreSQL is shared by every test,
and stays up): while PostgreSQL is away every door answers 503 with
Retry-After, in its own shape, and none ever a 500; once it is back, every
change the API acknowledged is in PostgreSQL and in Redis, and Redis agrees
with PostgreSQL about every link: nothing half-published."""

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlencode

import psycopg
import pytest
import redis

import devstack
from devstack.postgres import pg_bindir
from devstack.throwaway import ThrowawayStack
from links.models import Link, LinkOutbox
from slingshot.contract import link_key
from slingshot.errors import DATABASE_RETRY_AFTER

pytestmark = pytest.mark.django_db  # for the test database's schema

OUTAGE = 2.0  # seconds PostgreSQL stays down
MANAGE = str(devstack.REPO / "dashboard" / "manage.py")

# Run by `manage.py shell` against the stack's database: a person with a
# write key, a link for each API to change, and a signed-in session.
SETUP = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from testing.factories import make_link, make_user
from tokens.services import token_create

person = make_user()
_, key = token_create(user=person, name="outage", scope="write")
for door in ("api", "rest"):
    make_link(owner=person, url=f"https://example.com/{door}/0", slug=f"outage-{door}")
session = SessionStore()
session[SESSION_KEY] = str(person.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = person.get_session_auth_hash()
session.create()
print(json.dumps({"key": key, "session": session.session_key}))
"""


@dataclass
class Answer:
    door: str
    n: int
    started: float
    ended: float
    status: int
    headers: dict[str, str]
    body: bytes


class Doors:
    """One thread per door, each sending its requests one after another and
    keeping every answer: a PATCH of a link's target through /api/v1 and
    through Shlink's API, a YOURLS create, a dashboard page."""

    def __init__(self, port: int, key: str, session: str) -> None:
        self.port, self.key, self.session = port, key, session
        self.answers: list[Answer] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(door,)) for door in ("api", "rest", "yourls", "page")]

    def _request(self, door: str, n: int) -> tuple[str, str, bytes | None, dict[str, str]]:
        if door == "api":
            body = json.dumps({"url": f"https://example.com/api/{n}"}).encode()
            headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
            return "PATCH", "/api/v1/links/outage-api", body, headers
        if door == "rest":
            body = json.dumps({"longUrl": f"https://example.com/rest/{n}"}).encode()
            headers = {"X-Api-Key": self.key, "Content-Type": "application/json"}
            return "PATCH", "/rest/v3/short-urls/outage-rest", body, headers
        if door == "yourls":
            query = urlencode(
                {
                    "action": "shorturl",
                    "signature": self.key,
                    "url": f"https://example.com/yourls/{n}",
                    "keyword": f"outage-yourls-{n}",
                    "format": "json",
                }
            )
            return "GET", f"/yourls-api.php?{query}", None, {}
        return "GET", "/links/", None, {"Cookie": f"sessionid={self.session}"}

    def _run(self, door: str) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            method, path, body, headers = self._request(door, n)
            started = time.monotonic()
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                answer = Answer(
                    door, n, started, time.monotonic(), response.status, dict(response.headers), response.read()
                )
            finally:
                conn.close()
            self.answers.append(answer)
            time.sleep(0.02)

    def __enter__(self) -> "Doors":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def wait_for_success(self, *, after: float, timeout: float = 30.0) -> None:
        """Until every door has answered a request sent after `after` with a 200."""
        deadline = time.monotonic() + timeout
        while True:
            answered = {a.door for a in list(self.answers) if a.started > after and a.status == 200}
            if answered == {"api", "rest", "yourls", "page"}:
                return
            assert time.monotonic() < deadline, f"only {sorted(answered)} answered 200 again"
            time.sleep(0.05)


def copy_schema(source: dict, stack: ThrowawayStack) -> None:
    """The test database's schema, and the migrations it records, into the
    stack's database: a second's work, where migrating takes twenty."""
    bin_dir = pg_bindir()
    dump = [str(bin_dir / "pg_dump"), "--no-owner", "--no-privileges", "-h", source["HOST"], "-p", str(source["PORT"])]
    env = {**os.environ, "PGPASSWORD": source["PASSWORD"]}
    schema = subprocess.run(
        [*dump, "--schema-only", "-U", source["USER"], source["NAME"]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    migrations = subprocess.run(
        [*dump, "--data-only", "--table=django_migrations", "-U", source["USER"], source["NAME"]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # The extension is the stack's already (bootstrap_database); only its owner may comment on it.
    script = "\n".join(line for line in schema.splitlines() if not line.startswith("COMMENT ON EXTENSION"))
    subprocess.run(
        [str(bin_dir / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(stack.pg_port)]
        + ["-U", "slingshot", "slingshot"],
        input=script + "\n" + migrations,
        env={**os.environ, "PGPASSWORD": "test"},
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.fixture
def own_stack():
    """PostgreSQL and Redis of this test's own, with the test database's
    schema; the dashboard and the publisher on them. Yields the stack, the
    dashboard's port, the key and the session of SETUP."""
    from django.db import connection

    stack = ThrowawayStack(prefix="slingshot-pg-")
    try:
        stack.start()
        copy_schema(connection.settings_dict, stack)
        env = {**os.environ, **stack.environment(), "LINK_PUBLISH_INLINE": "false"}
        setup = subprocess.Popen(
            [sys.executable, MANAGE, "shell", "-c", SETUP], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        port = stack.start_dashboard(env)  # meanwhile
        made, failed = setup.communicate(timeout=120)
        assert setup.returncode == 0, failed.decode()
        credentials = json.loads(made.decode().strip().splitlines()[-1])
        stack.processes.append(
            subprocess.Popen(
                [sys.executable, MANAGE, "run_publisher"],
                env=env,
                stdout=open(stack.root / "publisher.log", "ab"),
                stderr=subprocess.STDOUT,
            )
        )
        yield stack, port, credentials
    finally:
        stack.cleanup()


def assert_unavailable(answer: Answer) -> None:
    """A 503 with Retry-After, in the shape of its door."""
    assert answer.status == 503, answer
    assert answer.headers["Retry-After"] == str(DATABASE_RETRY_AFTER), answer
    content_type = answer.headers["Content-Type"]
    if answer.door == "api":
        assert content_type == "application/json", answer
        assert json.loads(answer.body)["detail"].startswith("The database does not answer"), answer
    elif answer.door == "rest":
        assert content_type == "application/problem+json", answer
        problem = json.loads(answer.body)
        assert (problem["status"], problem["title"]) == (503, "Service Unavailable"), answer
        assert problem["type"] and problem["detail"], answer
    elif answer.door == "yourls":
        assert content_type.startswith("application/json"), answer
        assert json.loads(answer.body)["errorCode"] == "503", answer
    else:
        assert content_type.startswith("text/html") and b"Back in a moment" in answer.body, answer


def test_every_door_answers_503_while_postgresql_restarts_and_every_acknowledged_change_is_published(own_stack):
    stack, port, credentials = own_stack
    with Doors(port, credentials["key"], credentials["session"]) as doors:
        doors.wait_for_success(after=0)
        stack.stop_postgres()
        down = time.monotonic()
        time.sleep(OUTAGE)
        coming_back = time.monotonic()
        stack.start_postgres()
        doors.wait_for_success(after=time.monotonic())
    answers = doors.answers

    statuses = {(a.door, a.status) for a in answers}
    assert {status for _, status in statuses} <= {200, 503}, sorted(statuses)
    for answer in answers:
        if answer.status == 503:
            assert_unavailable(answer)
    while_down = [a for a in answers if a.started > down and a.ended < coming_back]
    assert {a.door for a in while_down} == {"api", "rest", "yourls", "page"}
    assert {a.status for a in while_down} == {503}

    # Once the publisher has delivered the outbox, Redis holds what
    # PostgreSQL holds for every link: each acknowledged change, and any
    # change committed whose answer was lost with the connection.
    database = psycopg.connect(
        host="127.0.0.1", port=stack.pg_port, user="slingshot", password="test", dbname="slingshot", autocommit=True
    )
    store = redis.Redis(port=stack.redis_port, password=stack.redis_password)
    with database:
        deadline = time.monotonic() + 30
        while database.execute(f"SELECT count(*) FROM {LinkOutbox._meta.db_table}").fetchone()[0]:
            assert time.monotonic() < deadline, "the publisher did not deliver the outbox"
            time.sleep(0.1)
        links = dict(database.execute(f"SELECT slug, url FROM {Link._meta.db_table}").fetchall())
    for slug, url in links.items():
        published = store.get(link_key(slug))
        assert published is not None and json.loads(published)["url"] == url, (slug, url, published)
    for door in ("api", "rest"):
        sent = [a for a in answers if a.door == door]
        acknowledged = max(a.n for a in sent if a.status == 200)
        kept = int(links[f"outage-{door}"].rsplit("/", 1)[1])
        assert acknowledged <= kept <= max(a.n for a in sent), (door, acknowledged, kept)
    created = [a.n for a in answers if a.door == "yourls" and a.status == 200]
    assert all(links[f"outage-yourls-{n}"] == f"https://example.com/yourls/{n}" for n in created)

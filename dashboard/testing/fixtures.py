"""The fixtures every app's tests share (a pytest plugin: pytest.ini loads
it before Django is set up, so the app modules are imported in the
fixtures)."""

import os
import subprocess
from pathlib import Path

import pytest

from devstack.dashboard import gunicorn_command
from devstack.net import free_port, wait_for_answer


@pytest.fixture
def make_user(db):
    """make_user(**flags): a person with testing.factories.PASSWORD."""
    from .factories import make_user

    return make_user


@pytest.fixture
def user(make_user):
    return make_user()


@pytest.fixture
def signed_in(client, user):
    """Django's test client, signed in as `user`."""
    client.force_login(user)
    return client


@pytest.fixture
def client_for(db):
    """client_for(user, scope="write", **token_fields): an API client with a fresh token."""
    from .factories import api_client

    return api_client


@pytest.fixture
def api(client_for, user):
    return client_for(user)


@pytest.fixture
def empty_streams():
    """Empty click and dead-letter streams before and after the test: ask for
    it (`pytest.mark.usefixtures("empty_streams")`) in tests of the import."""
    from slingshot.contract import CLICKS_STREAM, DEAD_LETTER_STREAM
    from slingshot.redis import get_redis

    client = get_redis()
    client.delete(CLICKS_STREAM, DEAD_LETTER_STREAM)
    yield
    client.delete(CLICKS_STREAM, DEAD_LETTER_STREAM)


# Left by the flush that ends each transactional test: rows the migrations'
# post_migrate made, which nothing else writes.
KEPT_BY_THE_FLUSH = ("django_content_type", "auth_permission")


@pytest.fixture(scope="session", autouse=True)
def _flush_empties_what_holds_rows():
    """Django's flush after each transactional test is a TRUNCATE of every
    table (0.24 s for the 47 here, most of them empty: each gets new files)
    and then post_migrate, which makes every content type and permission
    again (0.11 s of the test process's CPU). This flush truncates only the
    tables that hold a row (CASCADE: an empty table may refer to one), found
    in one query (3 ms), and leaves the content types and permissions, the
    same before and after, so that post_migrate has nothing to make."""
    from django.core.management.commands import flush

    def sql_flush(style, connection, reset_sequences=True, allow_cascade=False):
        tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
        tables = [table for table in tables if table not in KEPT_BY_THE_FLUSH]
        if not reset_sequences:  # else every table's sequence starts again, rows or not
            quote = connection.ops.quote_name
            with connection.cursor() as cursor:
                cursor.execute(
                    " UNION ALL ".join(f"(SELECT %s FROM {quote(table)} LIMIT 1)" for table in tables), tables
                )
                tables = [table for (table,) in cursor.fetchall()]
        return connection.ops.sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=True)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flush, "sql_flush", sql_flush)
        patch.setattr(flush, "emit_post_migrate_signal", lambda *args, **kwargs: None)
        yield


@pytest.fixture(scope="session", autouse=True)
def _people_hashed_with_fewer_iterations():
    """People's passwords hashed with testing.hashers's PBKDF2 at 1,000
    iterations in place of Django's at 1,000,000 (0.2 to 0.4 s of CPU a hash):
    the dashboard's and edge's tests sign in and set passwords about 200
    times, 46 s of CPU at Django's count. Processes a test starts
    (gunicorn, the stacks) hash as production does."""
    from django.conf import settings
    from django.test.utils import override_settings

    django_pbkdf2 = "django.contrib.auth.hashers.PBKDF2PasswordHasher"
    others = [hasher for hasher in settings.PASSWORD_HASHERS if hasher != django_pbkdf2]
    with override_settings(PASSWORD_HASHERS=["testing.hashers.FewerIterationsPBKDF2PasswordHasher", *others]):
        yield


@pytest.fixture(autouse=True)
def closed_breaker():
    """Each test starts with the dashboard's Redis breaker closed: an outage
    another test made (and ended) is not this test's (slingshot.redis)."""
    from slingshot.redis import breaker

    breaker.reset()


@pytest.fixture(autouse=True)
def forgotten_default_domain():
    """Each test finds the default domain's row anew: the tables are emptied
    or rolled back between tests, and a process keeps the row's id once it
    has committed (links.domains.default_domain)."""
    from links.domains import forget_default_domain

    forget_default_domain()


def database_url() -> str:
    """The test database, for a process of a test's own."""
    from django.db import connection

    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def start_dashboard(
    log_dir: Path,
    env: dict[str, str] | None = None,
    *,
    workers: int = 2,
    defaults: tuple[str, ...] = (),
    config: Path | None = None,
) -> tuple[subprocess.Popen, int]:
    """Starts the dashboard under gunicorn, as docker-compose.yml does, on the
    test database, with these settings on top of the test run's (and the
    settings named in `defaults` left at their defaults), and gunicorn's
    settings from `config` if given rather than dashboard/gunicorn.conf.py;
    its output goes to a log in `log_dir`. Returns gunicorn's master and its
    port once a worker answers, for the caller to stop; stops it itself if
    no worker answers."""
    port = free_port()
    environment = {**os.environ, "DATABASE_URL": database_url(), **(env or {})}
    for name in defaults:
        environment.pop(name, None)
    command = gunicorn_command(port, workers=workers)
    if config:
        command[command.index("--config") + 1] = str(config)
    with open(log_dir / f"gunicorn-{port}.log", "ab") as log:
        process = subprocess.Popen(
            command, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        wait_for_answer(port, process=process)
    except BaseException:
        process.terminate()
        process.wait(timeout=30)
        raise
    return process, port


@pytest.fixture
def make_dashboard(tmp_path):
    """make_dashboard(env=None, workers=2, defaults=()): start_dashboard's
    port; the dashboard is stopped after the test."""
    started = []

    def start(env: dict[str, str] | None = None, *, workers: int = 2, defaults: tuple[str, ...] = ()) -> int:
        process, port = start_dashboard(tmp_path, env, workers=workers, defaults=defaults)
        started.append(process)
        return port

    yield start
    for process in started:
        process.terminate()
    for process in started:
        process.wait(timeout=30)


# Connections of this database's other sessions in the midst of a statement
# or a transaction (the live server's request threads).
_BUSY_SESSIONS = """
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
    AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')
"""


@pytest.fixture(autouse=True)
def _live_server_done_before_the_flush(request):
    """A test with pytest-django's live_server ends with its database
    flushed (TRUNCATE of every table), while a request its browser sent
    last may still be running in a server thread: that request's insert
    and the TRUNCATE took each other's tables' locks in turn, and
    PostgreSQL ended the flush as a deadlock. So, before the flush, wait
    (up to 10 s) until no other session of the database is in a statement
    or a transaction."""
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("_django_db_helper")  # set up first, so that its flush comes after this wait
    yield
    import time

    from django.db import connection

    deadline = time.monotonic() + 10
    with connection.cursor() as cursor:
        while True:
            cursor.execute(_BUSY_SESSIONS)
            if not cursor.fetchone()[0] or time.monotonic() > deadline:
                break
            time.sleep(0.05)

"""What a release promises an operator (dashboard/slingshot/release.py,
docs/releasing.md): the migrations and schema files of the last release are
never edited again; a new database (the squashed migrations, applying sql/)
gets the models' schema, as a database that went through the chain of
migrations does (tests/test_upgrade.py compares the two databases
themselves); the version is shown; and a database whose schema is not this
version's is refused when each long-running part starts, with a message that
says what differs and what to run."""

import os
import subprocess
import sys
import time

import psycopg
import pytest
from django.apps import apps
from django.db.migrations.autodetector import MigrationAutodetector
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.state import ProjectState

import devstack
from devstack.dashboard import gunicorn_command
from devstack.net import free_port
from devstack.pytest_plugin import SERVERS
from slingshot.release import RELEASED_MIGRATIONS, REPO_DIR, VERSION, digest, released, schema_files

MANAGE = [sys.executable, str(devstack.REPO / "dashboard" / "manage.py")]


def test_no_released_migration_is_edited():
    version, files = released()
    assert files, f"{RELEASED_MIGRATIONS} lists no file"
    changed = [path for path, sha in files.items() if not (REPO_DIR / path).exists() or digest(REPO_DIR / path) != sha]
    assert not changed, (
        f"released in Slingshot {version}, and changed or removed since: {', '.join(changed)}. A released migration "
        "is never edited: put the change in a new migration (docs/releasing.md)."
    )


def test_every_migration_of_this_version_is_released_or_newer_than_the_lock():
    """A migration is either in the lock or was written after its release:
    then the lock is of an older version than this one."""
    version, files = released()
    unreleased = [
        path.relative_to(REPO_DIR).as_posix()
        for path in schema_files()
        if path.relative_to(REPO_DIR).as_posix() not in files
    ]
    assert not unreleased or version != VERSION, (
        f"{', '.join(unreleased)} changed the schema after Slingshot {VERSION} was locked: "
        "give the code a new version (slingshot/release.py) first"
    )


def _state_without_squashes() -> ProjectState:
    """The models as a database that went through every migration gets them."""
    loader = MigrationLoader(None, ignore_no_migrations=True, replace_migrations=False)
    squashed = {key for key, migration in loader.disk_migrations.items() if migration.replaces}
    leaves = [node for node in loader.graph.leaf_nodes() if node not in squashed]
    return loader.graph.make_state(nodes=leaves, at_end=True, real_apps=loader.unmigrated_apps)


def _changes(before: ProjectState, after: ProjectState) -> dict:
    return MigrationAutodetector(before, after).changes(graph=MigrationLoader(None).graph)


def test_the_chain_of_migrations_and_the_squashed_ones_give_the_same_models():
    models = ProjectState.from_apps(apps)
    through_squashes = MigrationLoader(None, ignore_no_migrations=True).project_state()
    assert not _changes(through_squashes, models), "a new database lacks a change of the models"
    assert not _changes(_state_without_squashes(), models), "an upgraded database lacks a change of the models"


def test_the_changelog_opens_with_this_version():
    changelog = (REPO_DIR / "CHANGELOG.md").read_text()
    first = next(line for line in changelog.splitlines() if line.startswith("## "))
    assert first.startswith(f"## {VERSION} "), first


# --- a database at another schema, refused as each part starts ----------------------------


@pytest.fixture(scope="module")
def other_database():
    """A database of its own on the tests' server, migrated by `manage.py
    migrate`; each test breaks it in its own way and mends it after."""
    name = "release_check"
    with psycopg.connect(SERVERS.environment()["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    url = SERVERS.environment()["DATABASE_URL"].rsplit("/", 1)[0] + "/" + name
    env = {**os.environ, "DATABASE_URL": url}
    subprocess.run([*MANAGE, "migrate", "--no-input", "-v", "0"], env=env, check=True, timeout=300)
    yield env
    with psycopg.connect(SERVERS.environment()["DATABASE_URL"], autocommit=True) as conn:
        # Not WITH (FORCE): that refuses to end an autovacuum worker
        # (InsufficientPrivilege), which a plain DROP ends itself.
        conn.execute(f"DROP DATABASE {name}")


def _run(env: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*MANAGE, *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_manage_py_slingshot_version_says_the_version_and_that_the_database_fits(other_database):
    done = _run(other_database, "slingshot_version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"Slingshot {VERSION}", "The database is at this version's schema."]


def _sql(env: dict, statement: str) -> None:
    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(statement)


def _gunicorn_refuses(env: dict) -> str:
    """What a dashboard started on this database says before it gives up."""
    port = free_port()
    process = subprocess.Popen(
        gunicorn_command(port, workers=1),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"the dashboard started on a database it does not fit:\n{output[-2000:]}")
    assert process.returncode != 0
    return output


def test_a_migration_history_that_names_migrations_the_database_never_got_is_refused(other_database):
    # What a database of main before 1.0.0 looked like to a later checkout:
    # `0001_initial` applied by name, without the columns a rewrite added.
    _sql(other_database, "ALTER TABLE links_linkoutbox DROP COLUMN host")
    try:
        for command in (["run_publisher"], ["import_clicks", "--once"]):
            done = _run(other_database, *command)
            assert done.returncode == 78, (command, done.stdout, done.stderr)
            assert "links_linkoutbox has no column host" in done.stderr, done.stderr
            assert "refuses to start" in done.stderr
        assert "links_linkoutbox has no column host" in _gunicorn_refuses(other_database)
        version = _run(other_database, "slingshot_version")
        assert version.returncode == 1 and "links_linkoutbox has no column host" in version.stderr
    finally:
        _sql(other_database, "ALTER TABLE links_linkoutbox ADD COLUMN host varchar(253) NOT NULL DEFAULT ''")
        _sql(other_database, "ALTER TABLE links_linkoutbox ALTER COLUMN host DROP DEFAULT")


def test_a_database_without_a_migration_of_this_version_is_refused_with_what_to_run(other_database):
    _sql(other_database, "DELETE FROM django_migrations WHERE app = 'web' AND name = '0001_initial'")
    try:
        done = _run(other_database, "run_publisher")
        assert done.returncode == 78
        assert "lacks 1 migration of this version: web.0001_initial" in done.stderr, done.stderr
        assert "Run `manage.py migrate`" in done.stderr
        assert "web.0001_initial" in _gunicorn_refuses(other_database)
    finally:
        _sql(other_database, "INSERT INTO django_migrations (app, name, applied) VALUES ('web', '0001_initial', now())")
    assert _run(other_database, "slingshot_version").returncode == 0


def test_a_database_of_a_newer_version_is_refused(other_database):
    _sql(other_database, "INSERT INTO django_migrations (app, name, applied) VALUES ('links', '0099_later', now())")
    try:
        done = _run(other_database, "import_clicks", "--once")
        assert done.returncode == 78
        assert "migrated by a newer version of Slingshot: it has links.0099_later" in done.stderr, done.stderr
    finally:
        _sql(other_database, "DELETE FROM django_migrations WHERE app = 'links' AND name = '0099_later'")


def test_a_part_that_starts_while_postgresql_is_away_is_not_refused_and_waits_for_it():
    """PostgreSQL down is an outage the parts ride out (they retry), not a
    schema to refuse: the publisher starts, and goes on retrying."""
    nowhere = {**os.environ, "DATABASE_URL": f"postgres://slingshot:x@127.0.0.1:{free_port()}/slingshot"}
    process = subprocess.Popen([*MANAGE, "run_publisher"], env=nowhere, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        assert process.poll() is None, process.stderr.read()
    finally:
        process.terminate()
        process.wait(timeout=30)

"""The schema in sql/ is what the migrations apply, and for the tables of
Django models it is exactly what Django itself would make of the models, so
that later migrations made from the models apply to it."""

import os

import pytest
from django.apps import apps
from django.db import connection

pytestmark = pytest.mark.django_db

MODELS = [
    "links.Domain",
    "links.Link",
    "links.LinkOutbox",
    "links.LinkImport",
    "links.UtmTemplate",
    "links.PreviewImage",
    "tokens.ApiToken",
    "teams.Team",
    "teams.Membership",
    "teams.GroupRole",
    "teams.AuditEntry",
    "accounts.SessionUse",
    "accounts.GeneratedPassword",
    "accounts.SsoIdentity",
    "accounts.Passkey",
    "web.Preferences",
    "importers.ImportJob",
    "importers.ImportFile",
    "importers.ImportedLink",
    "webhooks.Webhook",
    "webhooks.Message",
    "webhooks.Attempt",
    "webhooks.ClickBatch",
    "webhooks.LinkMark",
    "scim.ScimToken",
    "scim.ScimUser",
    "scim.ScimGroup",
    "scim.ScimMembership",
    "screening.ScreenList",
    "teams.Suspension",
    "moderation.Report",
    "moderation.Ban",
    "health.LinkHealth",
]


def describe(schema: str, table: str) -> dict:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name, data_type, udt_name, character_maximum_length, is_nullable, column_default,"
            " is_identity FROM information_schema.columns WHERE table_schema = %s AND table_name = %s"
            " ORDER BY column_name",
            [schema, table],
        )
        columns = cursor.fetchall()
        cursor.execute(
            # A foreign key between two of MODELS names its table with the
            # schema when the other schema has one of that name too.
            "SELECT conname, contype, replace(pg_get_constraintdef(c.oid), %s, '') FROM pg_constraint c"
            " JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace"
            " WHERE n.nspname = %s AND t.relname = %s ORDER BY 1",
            [schema + ".", schema, table],
        )
        constraints = cursor.fetchall()
        cursor.execute(
            "SELECT indexname, replace(indexdef, %s, '') FROM pg_indexes"
            " WHERE schemaname = %s AND tablename = %s ORDER BY 1",
            [schema + ".", schema, table],
        )
        indexes = cursor.fetchall()
    return {"columns": columns, "constraints": constraints, "indexes": indexes}


def test_the_tables_of_django_models_are_what_django_would_make():
    models = [apps.get_model(label) for label in MODELS]
    with connection.cursor() as cursor:
        cursor.execute("CREATE SCHEMA django_made")
        cursor.execute("SET LOCAL search_path TO django_made, public")
    with connection.schema_editor() as editor:
        for model in models:
            editor.create_model(model)
    for model in models:
        table = model._meta.db_table
        assert describe("public", table) == describe("django_made", table), table


def test_the_raw_tables_are_there_with_their_functions():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT to_regclass(t) IS NOT NULL FROM unnest(%s::text[]) t",
            [
                [
                    "clicks",
                    "orphan_visits",
                    "user_agents",
                    "click_rollup_hour",
                    "click_rollup_day",
                    "click_rollup_6h",
                    "click_breakdown_hour",
                    "click_breakdown_day",
                    "link_click_totals",
                    "click_day_fold",
                ]
            ],
        )
        assert all(row[0] for row in cursor.fetchall())
        cursor.execute("SELECT slingshot_ensure_click_partitions(now(), 0)")
        assert cursor.fetchone()[0] == 0  # the migration made the current month's already


def test_the_models_need_no_migration_that_is_not_written():
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)  # exits 1 if one is missing
    assert "No changes detected" in out.getvalue()


# Django's own apps and the libraries', whole; then the first migration of
# each of ours on a new database: those that apply sql/.
SQL_MIGRATIONS = [
    ("auth", None),
    ("contenttypes", None),
    ("sessions", None),
    ("admin", None),
    ("axes", None),
    ("otp_totp", None),
    ("otp_static", None),
    ("teams", "0001_initial"),
    ("links", "0001_squashed_0004_catch_up"),
    ("clicks", "0001_squashed_0002_catch_up"),
    ("api", "0001_squashed_0002_apitoken_team"),
    ("accounts", "0001_initial"),
    ("web", "0001_initial"),
    ("importers", "0001_initial"),
    ("webhooks", "0001_initial"),
    ("scim", "0001_initial"),
    ("screening", "0001_initial"),
    ("moderation", "0001_initial"),
    ("health", "0001_initial"),
]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_migrated_database_has_the_schema_in_sql_and_nothing_else():
    """sql/ is the schema as it is: a new database that went through every
    migration is the same as one that got only the migrations applying sql/
    (and Django's own), so that every later migration either changed nothing
    in the database or brought the same change to sql/ (docs/releasing.md)."""
    import json
    import subprocess
    import sys

    import psycopg

    import devstack
    from devstack.pytest_plugin import SERVERS
    from testing.schema import schema_of

    url = SERVERS.environment()["DATABASE_URL"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS sql_only")
        conn.execute("CREATE DATABASE sql_only")
    env = {**os.environ, "DATABASE_URL": url.rsplit("/", 1)[0] + "/sql_only"}
    # One process runs them in turn, as `manage.py migrate APP NAME` would
    # one after the other: a Django start is 2 - 3 s of CPU, nineteen of them most
    # of this test's time.
    script = (
        "import json, sys, django; django.setup()\n"
        "from django.core.management import call_command\n"
        "for app, name in json.loads(sys.argv[1]):\n"
        "    call_command('migrate', app, *([name] if name else []), verbosity=0)\n"
    )
    try:
        subprocess.run(
            [sys.executable, "-c", script, json.dumps(SQL_MIGRATIONS)],
            env={"DJANGO_SETTINGS_MODULE": "slingshot.settings", **env},
            cwd=devstack.REPO / "dashboard",
            check=True,
            timeout=600,
        )
        server = {"host": "127.0.0.1", "port": SERVERS.pg_port, "user": "slingshot", "password": "test"}
        assert schema_of(connection.settings_dict["NAME"], **server) == schema_of("sql_only", **server)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            # Not WITH (FORCE): that refuses to end an autovacuum worker
            # (InsufficientPrivilege), which a plain DROP ends itself.
            conn.execute("DROP DATABASE sql_only")

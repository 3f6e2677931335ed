"""The schema in sql/ is what the migrations apply, and for the tables of
Django models it is exactly what Django itself would make of the models, so
that later migrations made from the models apply to it."""

import pytest
from django.apps import apps
from django.db import connection

pytestmark = pytest.mark.django_db

MODELS = [
    "links.Domain",
    "links.Link",
    "links.LinkOutbox",
    "links.LinkImport",
    "api.ApiToken",
    "teams.Team",
    "teams.Membership",
    "teams.AuditEntry",
    "accounts.SessionUse",
    "web.Preferences",
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

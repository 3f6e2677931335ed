"""The schema as it is, in the top-level sql/ folder, one file per family of
tables. Each app's first migration applies its files and tells Django what
the tables of its models are (`SeparateDatabaseAndState`); later migrations
change them with Django's own operations."""

import logging
from pathlib import Path

from django.db import migrations

log = logging.getLogger(__name__)

DASHBOARD_DIR = Path(__file__).resolve().parent.parent
SQL_DIR = DASHBOARD_DIR.parent / "sql"


def apply_sql(
    *names: str, state_operations: list, reverse_sql: str | None = None
) -> migrations.SeparateDatabaseAndState:
    """`reverse_sql` undoes a single file, so that its migration can be unapplied."""
    assert reverse_sql is None or len(names) == 1, "reverse_sql undoes one file"
    return migrations.SeparateDatabaseAndState(
        database_operations=[
            migrations.RunSQL((SQL_DIR / name).read_text(), reverse_sql=reverse_sql) for name in names
        ],
        state_operations=state_operations,
    )


class SchemaMismatch(RuntimeError):
    """The database is not at the schema of this version of the code."""


def schema_problems(connection) -> list[str]:
    """What keeps this code from using the database, each in a sentence that
    says what to do; empty when the two agree. Migrations are compared by
    name with the ones on disk, and every table of this code's models is
    checked to have each of its fields' columns (a migration history can name
    a migration whose content the database never got)."""
    from django.apps import apps
    from django.db.migrations.executor import MigrationExecutor

    ours = {
        config.label for config in apps.get_app_configs() if Path(config.path).parent == SQL_DIR.parent / "dashboard"
    }
    executor = MigrationExecutor(connection)
    loader = executor.loader
    newer = sorted(
        f"{app}.{name}"
        for app, name in loader.applied_migrations
        if app in ours and (app, name) not in loader.disk_migrations
    )
    if newer:
        return [
            f"the database was migrated by a newer version of Slingshot: it has {', '.join(newer)}, which this "
            "version does not know. Run that newer version, or restore the backup taken before the upgrade "
            "(docs/operations.md, 'Upgrading')."
        ]
    pending = [
        f"{migration.app_label}.{migration.name}" for migration, _ in executor.migration_plan(loader.graph.leaf_nodes())
    ]
    if pending:
        return [
            f"the database lacks {len(pending)} migration{'s' if len(pending) != 1 else ''} of this version: "
            f"{', '.join(pending)}. Run `manage.py migrate` (`make run` does it by itself; with Docker Compose, "
            "the `migrate` service)."
        ]
    wanted = {}
    for model in apps.get_models():
        if model._meta.app_label in ours and not model._meta.proxy:
            wanted.setdefault(model._meta.db_table, set()).update(
                field.column for field in model._meta.concrete_fields if field.column
            )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ANY(%s)",
            [list(wanted)],
        )
        found: dict[str, set[str]] = {}
        for table, column in cursor.fetchall():
            found.setdefault(table, set()).add(column)
    missing = [
        f"{table} has no column {', '.join(sorted(columns - found.get(table, set())))}"
        if table in found
        else f"there is no table {table}"
        for table, columns in sorted(wanted.items())
        if columns - found.get(table, set())
    ]
    if missing:
        return [
            "the database's schema is not this version's although its migrations are applied ("
            + "; ".join(missing)
            + "): it was made by a development version whose migrations were later rewritten. Restore the backup "
            "taken before it, or see docs/operations.md, 'Upgrading'."
        ]
    return []


def check_schema(connection) -> None:
    """Raises SchemaMismatch, naming what differs and what to run, unless the
    database is at this version's schema. Called as each long-running part
    starts (slingshot/wsgi.py, slingshot/commands.py), so that none runs
    half-working against a database it does not fit. A database that does
    not answer is not refused here: each part waits for it as it does
    whenever PostgreSQL is away, and is checked when it starts again."""
    from django.db import OperationalError

    try:
        problems = schema_problems(connection)
    except OperationalError as exc:
        log.warning("could not check the database's schema, it does not answer: %s", str(exc).strip())
        return
    if problems:
        raise SchemaMismatch("Slingshot refuses to start: " + " ".join(problems))

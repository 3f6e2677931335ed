"""The schema as it is, in the top-level sql/ folder, one file per family of
tables. Each app's first migration applies its files and tells Django what
the tables of its models are (`SeparateDatabaseAndState`); later migrations
change them with Django's own operations."""

from pathlib import Path

from django.db import migrations

SQL_DIR = Path(__file__).resolve().parent.parent.parent / "sql"


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

"""The schema as it is, in the top-level sql/ folder, one file per family of
tables. Each app's one migration applies its files and tells Django what the
tables of its models are (`SeparateDatabaseAndState`)."""

from pathlib import Path

from django.db import migrations

SQL_DIR = Path(__file__).resolve().parent.parent.parent / "sql"


def apply_sql(*names: str, state_operations: list) -> migrations.SeparateDatabaseAndState:
    return migrations.SeparateDatabaseAndState(
        database_operations=[migrations.RunSQL((SQL_DIR / name).read_text()) for name in names],
        state_operations=state_operations,
    )

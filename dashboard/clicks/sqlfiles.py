"""Migrations apply the hand-written SQL in the top-level sql/ folder, so
there is one source of truth for it."""
from pathlib import Path

from django.db import migrations

SQL_DIR = Path(__file__).resolve().parent.parent.parent / "sql"


def run_sql_file(name: str, reverse_sql: str | None) -> migrations.RunSQL:
    return migrations.RunSQL((SQL_DIR / name).read_text(), reverse_sql=reverse_sql)

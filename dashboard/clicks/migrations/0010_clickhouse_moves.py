"""clickhouse_moves (sql/clicks.sql): how far `manage.py move_clicks` has
moved each table to the ClickHouse cluster. A new database has the table
from 0001 already."""

from django.db import migrations

CREATE = """
CREATE TABLE IF NOT EXISTS clickhouse_moves (
    table_name text        PRIMARY KEY CHECK (table_name IN ('clicks', 'orphan_visits')),
    chunk_rows integer     NOT NULL CHECK (chunk_rows > 0),
    after_key  jsonb,
    moved      bigint      NOT NULL DEFAULT 0,
    moved_at   timestamptz NOT NULL DEFAULT now()
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0009_clickhouse_batches"),
    ]

    operations = [migrations.RunSQL(CREATE, reverse_sql="DROP TABLE IF EXISTS clickhouse_moves")]

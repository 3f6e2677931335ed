"""clickhouse_deletions (sql/clicks.sql): visits deleted while clicks are
stored in ClickHouse, which every read of the cluster leaves out. A new
database has the table from 0001 already."""

from django.db import migrations

CREATE = """
CREATE TABLE IF NOT EXISTS clickhouse_deletions (
    link_id    bigint      PRIMARY KEY CHECK (link_id >= 0),
    before_ms  bigint      NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now()
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0010_clickhouse_moves"),
    ]

    operations = [migrations.RunSQL(CREATE, reverse_sql="DROP TABLE IF EXISTS clickhouse_deletions")]

"""clickhouse_batches (sql/clicks.sql): the ClickHouse store's batches
whose clicks were added to link_click_totals, so that a batch sent again
adds them once. A new database has the table from 0001 already."""

from django.db import migrations

CREATE = """
CREATE TABLE IF NOT EXISTS clickhouse_batches (
    store       text        NOT NULL,
    first_entry text        NOT NULL,
    consumer    text        NOT NULL,
    stored_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (store, first_entry)
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0008_purged_kinds"),
    ]

    operations = [migrations.RunSQL(CREATE, reverse_sql="DROP TABLE IF EXISTS clickhouse_batches")]

"""The visits imports bring from other shorteners are marked with their
import (sql/clicks.sql, `import_id`), so that the accounting leaves them
out. A new database has the column from 0001 already: every statement
checks first. Adding a column without a default rewrites nothing; the
partial index reads each partition once and holds only imported clicks."""

from django.db import migrations

IMPORT_ID = """
ALTER TABLE clicks ADD COLUMN IF NOT EXISTS import_id bigint;
ALTER TABLE orphan_visits ADD COLUMN IF NOT EXISTS import_id bigint;
CREATE INDEX IF NOT EXISTS clicks_imported_time ON clicks (occurred_at) WHERE import_id IS NOT NULL;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("clicks", "0001_squashed_0002_catch_up"),
    ]

    operations = [migrations.RunSQL(IMPORT_ID, reverse_sql=migrations.RunSQL.noop)]

from django.db import migrations

from clicks.sqlfiles import run_sql_file

REVERSE = """
DROP TABLE click_visitors_day, click_visitors_hour, click_breakdown_day, click_breakdown_hour,
           click_rollup_day, click_rollup_hour, orphan_visits;
DROP FUNCTION slingshot_drop_click_partitions(timestamptz);
CREATE OR REPLACE FUNCTION slingshot_ensure_click_partitions(from_ts timestamptz, months_ahead integer)
RETURNS integer LANGUAGE sql AS $$ SELECT slingshot_ensure_month_partitions('clicks', from_ts, months_ahead) $$;
ALTER TABLE clicks DROP COLUMN is_bot, DROP COLUMN browser, DROP COLUMN os, DROP COLUMN device,
                   DROP COLUMN country, DROP COLUMN referer_host;
"""


class Migration(migrations.Migration):
    dependencies = [("clicks", "0002_click_model")]

    operations = [run_sql_file("002_enrichment_orphans_rollups.sql", reverse_sql=REVERSE)]

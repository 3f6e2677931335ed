from django.db import migrations

from clicks.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    initial = True
    dependencies = []

    operations = [
        run_sql_file(
            "001_clicks.sql",
            reverse_sql="DROP TABLE clicks; DROP FUNCTION slingshot_ensure_click_partitions(timestamptz, integer);",
        ),
    ]

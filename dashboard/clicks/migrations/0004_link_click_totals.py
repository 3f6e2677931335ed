from django.db import migrations

from clicks.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("clicks", "0003_enrichment_orphans_rollups")]

    operations = [run_sql_file("003_link_click_totals.sql", reverse_sql="DROP TABLE link_click_totals;")]

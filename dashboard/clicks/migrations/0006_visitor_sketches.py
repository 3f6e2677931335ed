from django.db import migrations

from clicks.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("clicks", "0005_link_click_totals_model")]

    # Irreversible: the visitor sets it drops are gone.
    operations = [run_sql_file("004_visitor_sketches.sql", reverse_sql=None)]

from django.db import migrations

from clicks.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("clicks", "0006_visitor_sketches")]

    # Irreversible: hours not folded yet would be missing from the day tables.
    operations = [run_sql_file("005_day_fold.sql", reverse_sql=None)]

from django.db import migrations

from clicks.sqlfiles import run_sql_file


class Migration(migrations.Migration):
    dependencies = [("clicks", "0007_day_fold")]

    # Irreversible as written; the text is all in user_agents, though.
    operations = [run_sql_file("006_user_agents.sql", reverse_sql=None)]

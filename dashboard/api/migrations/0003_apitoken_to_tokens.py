"""The API token model moved to the tokens app (tokens/migrations/0001_initial.py),
table and all: the api app stops claiming it."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0002_apitoken_team"),
        ("tokens", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=[migrations.DeleteModel("ApiToken")]),
    ]

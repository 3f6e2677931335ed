"""The click tables and rollups of release 1.0.0 on a new database:
sql/clicks.sql and sql/rollups.sql, as they are. A database made before has
applied some of the migrations this one replaces, and Django applies it the
rest of them instead (0002_catch_up brings any earlier schema to this one)."""

import django.db.models.deletion
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("clicks", "0001_initial"),
        ("clicks", "0002_catch_up"),
    ]

    dependencies = [
        ("links", "0004_catch_up"),
    ]

    operations = [
        apply_sql(
            "clicks.sql",
            "rollups.sql",
            state_operations=[
                migrations.CreateModel(
                    name="Click",
                    fields=[
                        ("click_id", models.UUIDField(primary_key=True, serialize=False)),
                        ("occurred_at", models.DateTimeField()),
                        ("slug", models.CharField(max_length=64)),
                        ("ip", models.GenericIPAddressField(null=True)),
                        ("referer", models.TextField()),
                        ("is_bot", models.BooleanField()),
                        ("browser", models.TextField()),
                        ("os", models.TextField()),
                        ("device", models.TextField()),
                        ("country", models.TextField()),
                        ("referer_host", models.TextField()),
                        ("rule", models.TextField(null=True)),
                    ],
                    options={
                        "db_table": "clicks",
                        "ordering": ["-occurred_at"],
                        "managed": False,
                    },
                ),
                migrations.CreateModel(
                    name="LinkClickTotals",
                    fields=[
                        (
                            "link",
                            models.OneToOneField(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                primary_key=True,
                                related_name="click_totals",
                                serialize=False,
                                to="links.link",
                            ),
                        ),
                        ("clicks", models.BigIntegerField()),
                        ("human_clicks", models.BigIntegerField()),
                    ],
                    options={
                        "db_table": "link_click_totals",
                        "managed": False,
                    },
                ),
                migrations.CreateModel(
                    name="UserAgent",
                    fields=[
                        ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                        ("user_agent", models.TextField()),
                    ],
                    options={
                        "db_table": "user_agents",
                        "managed": False,
                    },
                ),
            ],
        ),
    ]

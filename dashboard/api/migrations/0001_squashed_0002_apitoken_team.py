"""API tokens of release 1.0.0 on a new database: sql/users_and_tokens.sql,
as it is. A database made before has applied some of the migrations this
one replaces, and Django applies it the rest of them instead."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("api", "0001_initial"),
        ("api", "0002_apitoken_team"),
    ]

    dependencies = [
        ("teams", "0002_personal_teams"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        apply_sql(
            "users_and_tokens.sql",
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=100)),
                        ("prefix", models.CharField(max_length=16)),
                        ("digest", models.CharField(max_length=64, unique=True)),
                        (
                            "scope",
                            models.CharField(
                                choices=[("read", "read-only"), ("write", "read-write")], default="read", max_length=5
                            ),
                        ),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("expires_at", models.DateTimeField(blank=True, null=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "team",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="api_tokens", to="teams.team"
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="api_tokens",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created_at"],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("scope__in", ["read", "write"])), name="api_token_scope"
                            )
                        ],
                    },
                ),
            ],
        ),
    ]

"""API tokens become an app of their own (tokens/), below links and the
pages that use them; their table stays `api_apitoken`, which the api app
made. Nothing in the database changes but the name Django files the model
under (its content type, so its permissions follow it)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def content_type_to_tokens(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="tokens", model="apitoken").exists():
        ContentType.objects.filter(app_label="api", model="apitoken").update(app_label="tokens")


def content_type_to_api(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="tokens", model="apitoken").update(app_label="api")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("api", "0002_apitoken_team"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("teams", "0002_personal_teams"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
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
                        "db_table": "api_apitoken",
                        "ordering": ["-created_at"],
                        "constraints": [
                            models.CheckConstraint(condition=models.Q(("scope__in", ["read", "write"])), name="api_token_scope")
                        ],
                    },
                ),
            ],
        ),
        migrations.RunPython(content_type_to_tokens, content_type_to_api),
    ]

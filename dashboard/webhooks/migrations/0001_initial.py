"""The tables of webhooks (sql/webhooks.sql, as it is)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("teams", "0003_auditentry_team_renamed"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        apply_sql(
            "webhooks.sql",
            reverse_sql="DROP TABLE webhooks_attempt, webhooks_message, webhooks_webhook, webhooks_clickbatch, "
            "webhooks_linkmark",
            state_operations=[
                migrations.CreateModel(
                    name="ClickBatch",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("ranges", models.JSONField()),
                        ("first_at", models.DateTimeField()),
                        ("last_at", models.DateTimeField()),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                ),
                migrations.CreateModel(
                    name="LinkMark",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("link_id", models.BigIntegerField()),
                        ("event_type", models.CharField(max_length=32)),
                        ("at", models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                    options={
                        "constraints": [
                            models.UniqueConstraint(fields=("link_id", "event_type"), name="webhooks_linkmark_once")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Webhook",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("url", models.CharField(max_length=2048)),
                        ("description", models.CharField(blank=True, default="", max_length=200)),
                        ("events", models.JSONField(default=list)),
                        ("enabled", models.BooleanField(default=True)),
                        ("disabled_reason", models.CharField(blank=True, default="", max_length=300)),
                        ("secret", models.BinaryField()),
                        ("previous_secret", models.BinaryField(default=b"")),
                        ("previous_until", models.DateTimeField(blank=True, null=True)),
                        ("failing_since", models.DateTimeField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="webhooks", to="teams.team"
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created_at", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="Message",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("msg_id", models.CharField(max_length=64)),
                        (
                            "event_type",
                            models.CharField(
                                choices=[
                                    ("link.created", "link.created"),
                                    ("link.updated", "link.updated"),
                                    ("link.deleted", "link.deleted"),
                                    ("link.clicked", "link.clicked"),
                                    ("link.limit_reached", "link.limit_reached"),
                                    ("link.expired", "link.expired"),
                                    ("import.finished", "import.finished"),
                                    ("webhook.test", "webhook.test"),
                                ],
                                max_length=32,
                            ),
                        ),
                        ("body", models.TextField()),
                        (
                            "state",
                            models.CharField(
                                choices=[("pending", "Pending"), ("delivered", "Delivered"), ("failed", "Failed")],
                                default="pending",
                                max_length=9,
                            ),
                        ),
                        ("attempts", models.IntegerField(default=0)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "webhook",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="messages",
                                to="webhooks.webhook",
                            ),
                        ),
                    ],
                ),
                migrations.CreateModel(
                    name="Attempt",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("number", models.IntegerField()),
                        ("at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("status_code", models.IntegerField(blank=True, null=True)),
                        ("duration_ms", models.IntegerField()),
                        ("response", models.TextField(blank=True, default="")),
                        ("error", models.CharField(blank=True, default="", max_length=300)),
                        ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "message",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="attempt_rows",
                                to="webhooks.message",
                            ),
                        ),
                        (
                            "webhook",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="attempts",
                                to="webhooks.webhook",
                            ),
                        ),
                    ],
                ),
                migrations.AddIndex(
                    model_name="message",
                    index=models.Index(
                        condition=models.Q(("next_attempt_at__isnull", False)),
                        fields=["next_attempt_at"],
                        name="webhooks_message_due",
                    ),
                ),
                migrations.AddIndex(
                    model_name="message",
                    index=models.Index(fields=["webhook", "-created_at"], name="webhooks_message_recent"),
                ),
                migrations.AddConstraint(
                    model_name="message",
                    constraint=models.UniqueConstraint(fields=("webhook", "msg_id"), name="webhooks_message_once"),
                ),
                migrations.AddConstraint(
                    model_name="message",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("state__in", ["pending", "delivered", "failed"])),
                        name="webhooks_message_state",
                    ),
                ),
                migrations.AddIndex(
                    model_name="attempt",
                    index=models.Index(fields=["webhook", "-id"], name="webhooks_attempt_recent"),
                ),
            ],
        ),
    ]

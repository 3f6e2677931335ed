"""The table of the links' health: sql/health.sql."""

import django.db.models.deletion
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("links", "0006_link_listed"),
    ]

    operations = [
        apply_sql(
            "health.sql",
            reverse_sql="DROP TABLE health_linkhealth",
            state_operations=[
                migrations.CreateModel(
                    name="LinkHealth",
                    fields=[
                        (
                            "link",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                primary_key=True,
                                related_name="health",
                                serialize=False,
                                to="links.link",
                            ),
                        ),
                        ("url", models.TextField()),
                        ("checked_at", models.DateTimeField()),
                        ("status", models.CharField(choices=[("ok", "Ok"), ("broken", "Broken")], max_length=6)),
                        (
                            "reason",
                            models.CharField(
                                blank=True,
                                choices=[
                                    ("dns", "DNS failure"),
                                    ("http_4xx", "4xx answer"),
                                    ("http_5xx", "5xx answer"),
                                    ("tls", "TLS error"),
                                    ("too_many_redirects", "too many redirects"),
                                    ("timeout", "timeout"),
                                    ("connect", "no connection"),
                                    ("refused_address", "private address"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("http_status", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("detail", models.CharField(blank=True, max_length=300)),
                        ("final_url", models.TextField(blank=True)),
                        ("broken_since", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("status__in", ["ok", "broken"])), name="health_status_valid"
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    models.Q(("broken_since__isnull", True), ("reason", ""), ("status", "ok")),
                                    models.Q(
                                        ("broken_since__isnull", False),
                                        ("status", "broken"),
                                        models.Q(("reason", ""), _negated=True),
                                    ),
                                    _connector="OR",
                                ),
                                name="health_broken_has_reason_and_since",
                            ),
                        ],
                    },
                ),
            ],
        ),
    ]

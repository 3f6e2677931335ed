"""The tables of imports (sql/importers.sql, as it is)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("links", "0005_option_words"),
        ("teams", "0003_auditentry_team_renamed"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        apply_sql(
            "importers.sql",
            reverse_sql="DROP TABLE importers_importedlink, importers_importfile, importers_importjob",
            state_operations=[
                migrations.CreateModel(
                    name="ImportJob",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "source",
                            models.CharField(
                                choices=[
                                    ("shlink", "Shlink (REST API)"),
                                    ("yourls", "YOURLS (database dump)"),
                                    ("kutt", "Kutt (API v2)"),
                                    ("bitly", "Bitly (API v4 or CSV export)"),
                                    ("csv", "Slingshot (links CSV export)"),
                                ],
                                max_length=10,
                            ),
                        ),
                        ("options", models.JSONField(blank=True, default=dict)),
                        ("secret", models.BinaryField(blank=True, default=b"")),
                        ("dry_run", models.BooleanField(default=False)),
                        ("background", models.BooleanField(default=False)),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("queued", "waiting"),
                                    ("running", "running"),
                                    ("done", "done"),
                                    ("failed", "failed"),
                                ],
                                default="queued",
                                max_length=7,
                            ),
                        ),
                        ("progress", models.JSONField(blank=True, default=dict)),
                        ("summary", models.JSONField(blank=True, default=dict)),
                        ("error", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "domain",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="links.domain",
                            ),
                        ),
                        (
                            "owner",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="import_jobs", to="teams.team"
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-id"],
                    },
                ),
                migrations.CreateModel(
                    name="ImportFile",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("part", models.PositiveIntegerField()),
                        ("data", models.BinaryField()),
                        (
                            "job",
                            models.ForeignKey(
                                db_index=False,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="files",
                                to="importers.importjob",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["job", "part"],
                    },
                ),
                migrations.CreateModel(
                    name="ImportedLink",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("source_key", models.CharField(max_length=300)),
                        ("external_id", models.CharField(max_length=300)),
                        ("carried_clicks", models.BigIntegerField(default=0)),
                        (
                            "link",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="links.link"
                            ),
                        ),
                        (
                            "job",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="importers.importjob",
                            ),
                        ),
                    ],
                ),
                migrations.AddConstraint(
                    model_name="importjob",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("state__in", ["queued", "running", "done", "failed"])),
                        name="importjob_state_valid",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="importjob",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("source__in", ["shlink", "yourls", "kutt", "bitly", "csv"])),
                        name="importjob_source_valid",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="importfile",
                    constraint=models.UniqueConstraint(fields=("job", "part"), name="importfile_part_once"),
                ),
                migrations.AddConstraint(
                    model_name="importedlink",
                    constraint=models.UniqueConstraint(fields=("source_key", "external_id"), name="importedlink_once"),
                ),
            ],
        ),
    ]

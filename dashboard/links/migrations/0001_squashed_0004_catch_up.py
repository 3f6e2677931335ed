"""The links tables of release 1.0.0 on a new database: sql/links.sql, as it
is. A database made before has applied some of the migrations this one
replaces, and Django applies it the rest of them instead (0004_catch_up
brings any earlier schema to this one)."""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.core.validators
import django.db.models.deletion
import django.utils.timezone
import links.models
import links.rules
import links.slugs
import links.validation
from django.conf import settings
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("links", "0001_initial"),
        ("links", "0002_link_team"),
        ("links", "0003_link_tags_lower_gin"),
        ("links", "0004_catch_up"),
    ]

    dependencies = [
        ("teams", "0002_personal_teams"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        apply_sql(
            "links.sql",
            state_operations=[
                migrations.CreateModel(
                    name="Domain",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "host",
                            models.CharField(
                                max_length=253, unique=True, validators=[links.validation.validate_domain_host]
                            ),
                        ),
                        (
                            "root_url",
                            models.TextField(
                                blank=True,
                                validators=[links.validation.validate_target_url],
                                verbose_name="root redirect",
                            ),
                        ),
                        (
                            "not_found_url",
                            models.TextField(
                                blank=True,
                                validators=[links.validation.validate_target_url],
                                verbose_name="not-found redirect",
                            ),
                        ),
                        ("https_redirect", models.BooleanField(default=False, verbose_name="redirect HTTP to HTTPS")),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                    ],
                    options={
                        "ordering": ["host"],
                    },
                ),
                migrations.CreateModel(
                    name="LinkOutbox",
                    fields=[
                        ("id", models.BigAutoField(primary_key=True, serialize=False)),
                        ("host", models.CharField(max_length=253)),
                        ("slug", models.CharField(blank=True, max_length=64)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                    options={
                        "ordering": ["id"],
                    },
                ),
                migrations.CreateModel(
                    name="LinkImport",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("filename", models.CharField(max_length=255)),
                        ("rows", models.JSONField(default=list)),
                        ("position", models.PositiveIntegerField(default=0)),
                        ("created", models.PositiveIntegerField(default=0)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "owner",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="link_imports",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="link_imports",
                                to="teams.team",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created_at"],
                    },
                ),
                migrations.CreateModel(
                    name="Link",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("slug", models.CharField(max_length=64, validators=[links.slugs.validate_slug])),
                        (
                            "url",
                            models.TextField(
                                validators=[links.validation.validate_target_url], verbose_name="target URL"
                            ),
                        ),
                        ("title", models.CharField(blank=True, max_length=200)),
                        ("description", models.TextField(blank=True, max_length=2000)),
                        (
                            "tags",
                            django.contrib.postgres.fields.ArrayField(
                                base_field=models.CharField(max_length=50),
                                blank=True,
                                default=list,
                                size=20,
                                validators=[links.validation.validate_tags],
                            ),
                        ),
                        (
                            "redirect_status",
                            models.PositiveSmallIntegerField(
                                choices=[(301, "301"), (302, "302"), (307, "307"), (308, "308")], default=302
                            ),
                        ),
                        ("valid_since", models.DateTimeField(blank=True, null=True)),
                        ("expires_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "max_visits",
                            models.PositiveIntegerField(
                                blank=True, null=True, validators=[django.core.validators.MinValueValidator(1)]
                            ),
                        ),
                        ("forward_query", models.BooleanField(default=False)),
                        ("crawlable", models.BooleanField(default=False)),
                        ("password", models.CharField(blank=True, max_length=128)),
                        ("rules", models.JSONField(blank=True, default=list, validators=[links.rules.check_rules])),
                        ("split", models.JSONField(blank=True, default=list, validators=[links.rules.check_split])),
                        ("is_active", models.BooleanField(default=True, verbose_name="active")),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "domain",
                            models.ForeignKey(
                                db_index=False,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="links",
                                to="links.domain",
                            ),
                        ),
                        (
                            "owner",
                            models.ForeignKey(
                                blank=True,
                                db_index=False,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="links",
                                to=settings.AUTH_USER_MODEL,
                                verbose_name="created by",
                            ),
                        ),
                        (
                            "team",
                            models.ForeignKey(
                                db_index=False,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="links",
                                to="teams.team",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created_at"],
                        "indexes": [
                            models.Index(fields=["owner", "-created_at"], name="link_owner_created"),
                            models.Index(fields=["team", "-created_at"], name="link_team_created"),
                            django.contrib.postgres.indexes.GinIndex(
                                links.models.LowerTags("tags"), name="link_tags_lower_gin"
                            ),
                            models.Index(
                                condition=models.Q(("crawlable", True)),
                                fields=["domain", "slug"],
                                name="link_crawlable",
                            ),
                        ],
                        "constraints": [
                            models.UniqueConstraint(fields=("domain", "slug"), name="link_domain_slug"),
                            models.CheckConstraint(
                                condition=models.Q(("redirect_status__in", (301, 302, 307, 308))),
                                name="link_redirect_status_valid",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("slug__regex", "^[A-Za-z0-9_-]{1,64}$")), name="link_slug_shape"
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("max_visits__gte", 1)), name="link_max_visits_positive"
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("valid_since__lt", models.F("expires_at")),
                                    ("valid_since__isnull", True),
                                    ("expires_at__isnull", True),
                                    _connector="OR",
                                ),
                                name="link_valid_before_expiry",
                            ),
                        ],
                    },
                ),
            ],
        ),
    ]

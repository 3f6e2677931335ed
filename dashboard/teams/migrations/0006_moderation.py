"""Suspensions of people and teams by the service's staff (moderation/),
the team's column that says one is in force, and the audit's words for
the staff's actions: sql/suspensions.sql, which sql/teams.sql has for a new
database already (hence its IF NOT EXISTS); the model's state is Django's."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0005_require_second_factor"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        apply_sql(
            "suspensions.sql",
            reverse_sql="DROP TABLE teams_suspension; ALTER TABLE teams_team DROP COLUMN suspended_at",
            state_operations=[
                migrations.AddField(
                    model_name="team",
                    name="suspended_at",
                    field=models.DateTimeField(blank=True, null=True),
                ),
                migrations.CreateModel(
                    name="Suspension",
                    fields=[
                        ("id", models.BigAutoField(primary_key=True, serialize=False)),
                        ("reason", models.CharField(blank=True, max_length=500)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("lifted_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "created_by",
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
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="suspensions",
                                to="teams.team",
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="suspensions",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "indexes": [
                            models.Index(
                                condition=models.Q(("lifted_at__isnull", True)),
                                fields=["user"],
                                name="suspension_user_active",
                            )
                        ],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(
                                    models.Q(("team__isnull", False), ("user__isnull", True)),
                                    models.Q(("team__isnull", True), ("user__isnull", False)),
                                    _connector="OR",
                                ),
                                name="suspension_one_subject",
                            )
                        ],
                    },
                ),
            ],
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="action",
            field=models.CharField(
                choices=[
                    ("team.created", "created the team"),
                    ("team.renamed", "renamed the team"),
                    ("team.second_factor", "changed whether members need a second factor"),
                    ("link.created", "created a link"),
                    ("link.changed", "changed a link"),
                    ("link.disabled", "disabled a link"),
                    ("link.enabled", "enabled a link"),
                    ("link.deleted", "deleted a link"),
                    ("member.added", "added a member"),
                    ("member.changed", "changed a member's role"),
                    ("member.removed", "removed a member"),
                    ("token.created", "created an API token"),
                    ("token.revoked", "revoked an API token"),
                    ("link.blocked", "stopped a link (staff)"),
                    ("link.unblocked", "let a stopped link go on (staff)"),
                    ("team.suspended", "suspended the team (staff)"),
                    ("team.unsuspended", "lifted the team's suspension (staff)"),
                    ("member.suspended", "suspended a person (staff)"),
                    ("member.unsuspended", "lifted a person's suspension (staff)"),
                ],
                max_length=20,
            ),
        ),
    ]

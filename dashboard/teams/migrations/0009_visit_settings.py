"""How long a team keeps its visits and what it keeps of its visitors'
addresses (Team.visit_retention_days, Team.ip_storage), and the audit's
words for changing them and for a purge: the columns and their checks as
sql/teams.sql has them. A new database has them from 0001 already, hence
IF NOT EXISTS and the checks made again; the model's state is Django's."""

import django.core.validators
from django.db import migrations, models

SQL = """
ALTER TABLE teams_team ADD COLUMN IF NOT EXISTS visit_retention_days integer NULL;
ALTER TABLE teams_team ADD COLUMN IF NOT EXISTS ip_storage varchar(9) DEFAULT '' NOT NULL;
ALTER TABLE teams_team DROP CONSTRAINT IF EXISTS team_retention_positive;
ALTER TABLE teams_team ADD CONSTRAINT team_retention_positive CHECK (visit_retention_days >= 1);
ALTER TABLE teams_team DROP CONSTRAINT IF EXISTS team_ip_storage_valid;
ALTER TABLE teams_team ADD CONSTRAINT team_ip_storage_valid CHECK (ip_storage IN ('', 'anonymise', 'full', 'none'));
"""
REVERSE = "ALTER TABLE teams_team DROP COLUMN visit_retention_days; ALTER TABLE teams_team DROP COLUMN ip_storage"
IP_STORAGE_CHOICES = [
    ("", "as the service keeps them (CLICK_IP_PRIVACY)"),
    ("anonymise", "anonymised (IPv4 /24, IPv6 /48)"),
    ("full", "whole"),
    ("none", "not at all"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0008_utm_template_actions"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SQL, reverse_sql=REVERSE)],
            state_operations=[
                migrations.AddField(
                    model_name="team",
                    name="visit_retention_days",
                    field=models.IntegerField(
                        blank=True,
                        help_text="Empty keeps them.",
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(1),
                            django.core.validators.MaxValueValidator(3650),
                        ],
                        verbose_name="delete visits older than (days)",
                    ),
                ),
                migrations.AddField(
                    model_name="team",
                    name="ip_storage",
                    field=models.CharField(
                        blank=True,
                        choices=IP_STORAGE_CHOICES,
                        db_default="",
                        default="",
                        max_length=9,
                        verbose_name="visitors' addresses kept",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="team",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("visit_retention_days__gte", 1)), name="team_retention_positive"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="team",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("ip_storage__in", ["", "anonymise", "full", "none"])),
                        name="team_ip_storage_valid",
                    ),
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
                    ("team.retention", "changed how long visits are kept"),
                    ("team.ip_storage", "changed what is kept of visitors' addresses"),
                    ("team.visits_purged", "deleted visits past the team's retention"),
                    ("link.created", "created a link"),
                    ("link.changed", "changed a link"),
                    ("link.disabled", "disabled a link"),
                    ("link.enabled", "enabled a link"),
                    ("link.deleted", "deleted a link"),
                    ("link.visits_deleted", "deleted a link's visits"),
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
                    ("utm_template.created", "made a UTM template"),
                    ("utm_template.changed", "changed a UTM template"),
                    ("utm_template.deleted", "deleted a UTM template"),
                ],
                max_length=20,
            ),
        ),
    ]

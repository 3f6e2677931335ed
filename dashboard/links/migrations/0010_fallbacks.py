"""Fallbacks (Link.expired_url, Domain.expired_url): where the visitors of
a link that has expired or used its visits go instead of the 410 page. Their
columns, as sql/links.sql has them. A new database has them from 0001
already, hence IF NOT EXISTS; the model's state is Django's alone."""

from django.db import migrations, models

import links.validation

SQL = (
    "ALTER TABLE links_link ADD COLUMN IF NOT EXISTS expired_url text DEFAULT '' NOT NULL; "
    "ALTER TABLE links_domain ADD COLUMN IF NOT EXISTS expired_url text DEFAULT '' NOT NULL"
)


class Migration(migrations.Migration):
    dependencies = [
        ("links", "0009_app_targets"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    SQL,
                    reverse_sql="ALTER TABLE links_link DROP COLUMN expired_url; "
                    "ALTER TABLE links_domain DROP COLUMN expired_url",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="domain",
                    name="expired_url",
                    field=models.TextField(
                        blank=True,
                        db_default="",
                        default="",
                        validators=[links.validation.validate_target_url],
                        verbose_name="expired redirect",
                    ),
                ),
                migrations.AddField(
                    model_name="link",
                    name="expired_url",
                    field=models.TextField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="Where visitors go once the link has expired or had all its visits, "
                        "instead of a 410 page.",
                        validators=[links.validation.validate_target_url],
                        verbose_name="after it expires",
                    ),
                ),
            ],
        ),
    ]

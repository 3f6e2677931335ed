"""A domain's app-link files (Domain.apple_app_site_association and
Domain.assetlinks, links/app_files.py): their columns, as sql/links.sql has
them. A new database has them from 0001 already, hence IF NOT EXISTS; the
model's state is Django's alone. Publishing a domain again (any change to
it) writes them to Redis."""

from django.db import migrations, models

import links.app_files

SQL = (
    "ALTER TABLE links_domain ADD COLUMN IF NOT EXISTS apple_app_site_association jsonb NULL, "
    "ADD COLUMN IF NOT EXISTS assetlinks jsonb NULL"
)


class Migration(migrations.Migration):
    dependencies = [
        ("links", "0007_moderation"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    SQL,
                    reverse_sql="ALTER TABLE links_domain DROP COLUMN apple_app_site_association, DROP COLUMN assetlinks",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="domain",
                    name="apple_app_site_association",
                    field=models.JSONField(
                        blank=True,
                        null=True,
                        validators=[links.app_files.validate_apple_app_site_association],
                        verbose_name="apple-app-site-association",
                    ),
                ),
                migrations.AddField(
                    model_name="domain",
                    name="assetlinks",
                    field=models.JSONField(
                        blank=True,
                        null=True,
                        validators=[links.app_files.validate_assetlinks],
                        verbose_name="assetlinks.json",
                    ),
                ),
            ],
        ),
    ]

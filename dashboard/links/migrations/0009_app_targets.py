"""A link's app targets (Link.ios_url, Link.android_url): their columns,
as sql/links.sql has them. A new database has them from 0001 already,
hence IF NOT EXISTS; the model's state is Django's alone. A constant
default: PostgreSQL adds them without rewriting the table."""

from django.db import migrations, models

import links.validation

SQL = (
    "ALTER TABLE links_link ADD COLUMN IF NOT EXISTS ios_url text DEFAULT '' NOT NULL, "
    "ADD COLUMN IF NOT EXISTS android_url text DEFAULT '' NOT NULL"
)


class Migration(migrations.Migration):
    dependencies = [
        ("links", "0008_app_files"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(SQL, reverse_sql="ALTER TABLE links_link DROP COLUMN ios_url, DROP COLUMN android_url")
            ],
            state_operations=[
                migrations.AddField(
                    model_name="link",
                    name="ios_url",
                    field=models.TextField(
                        blank=True,
                        db_default="",
                        default="",
                        validators=[links.validation.validate_target_url],
                        verbose_name="iOS URL",
                    ),
                ),
                migrations.AddField(
                    model_name="link",
                    name="android_url",
                    field=models.TextField(
                        blank=True,
                        db_default="",
                        default="",
                        validators=[links.validation.validate_target_url],
                        verbose_name="Android URL",
                    ),
                ),
            ],
        ),
    ]

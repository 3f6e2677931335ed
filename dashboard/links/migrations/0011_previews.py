"""Social previews (Link.preview_title, preview_description,
preview_image_url): what link-preview crawlers are shown. Their columns, as
sql/links.sql has them. A new database has them from 0001 already, hence
IF NOT EXISTS; the model's state is Django's alone."""

from django.db import migrations, models

import links.validation

SQL = (
    "ALTER TABLE links_link ADD COLUMN IF NOT EXISTS preview_title varchar(200) DEFAULT '' NOT NULL; "
    "ALTER TABLE links_link ADD COLUMN IF NOT EXISTS preview_description varchar(500) DEFAULT '' NOT NULL; "
    "ALTER TABLE links_link ADD COLUMN IF NOT EXISTS preview_image_url text DEFAULT '' NOT NULL"
)
REVERSE_SQL = (
    "ALTER TABLE links_link DROP COLUMN preview_title; "
    "ALTER TABLE links_link DROP COLUMN preview_description; "
    "ALTER TABLE links_link DROP COLUMN preview_image_url"
)


class Migration(migrations.Migration):
    dependencies = [
        ("links", "0010_fallbacks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SQL, reverse_sql=REVERSE_SQL)],
            state_operations=[
                migrations.AddField(
                    model_name="link",
                    name="preview_title",
                    field=models.CharField(
                        blank=True, db_default="", default="", max_length=200, verbose_name="preview title"
                    ),
                ),
                migrations.AddField(
                    model_name="link",
                    name="preview_description",
                    field=models.CharField(
                        blank=True, db_default="", default="", max_length=500, verbose_name="preview description"
                    ),
                ),
                migrations.AddField(
                    model_name="link",
                    name="preview_image_url",
                    field=models.TextField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="An image for the card shown where the link is shared, 1200×630 px is best.",
                        validators=[links.validation.validate_target_url],
                        verbose_name="preview image URL",
                    ),
                ),
            ],
        ),
    ]

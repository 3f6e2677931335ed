"""Uploaded preview images (links.models.PreviewImage, Link.preview_image):
their table and the link's column, as sql/links.sql has them. A new
database has them from 0001 already, hence IF NOT EXISTS; the model's state
is Django's alone."""

import django.utils.timezone
from django.db import migrations, models

SQL = """
CREATE TABLE IF NOT EXISTS links_previewimage (
    name         varchar(80) NOT NULL PRIMARY KEY,
    content      bytea NOT NULL,
    content_type varchar(20) NOT NULL,
    width        integer NOT NULL CHECK (width >= 0),
    height       integer NOT NULL CHECK (height >= 0),
    created_at   timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS links_previewimage_name_74cc12c9_like ON links_previewimage (name varchar_pattern_ops);
ALTER TABLE links_link ADD COLUMN IF NOT EXISTS preview_image varchar(80) DEFAULT '' NOT NULL;
CREATE INDEX IF NOT EXISTS link_preview_image ON links_link (preview_image) WHERE NOT (preview_image = '');
"""
REVERSE_SQL = (
    "DROP INDEX link_preview_image; ALTER TABLE links_link DROP COLUMN preview_image; DROP TABLE links_previewimage"
)


class Migration(migrations.Migration):
    dependencies = [
        ("links", "0012_utm_templates"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SQL, reverse_sql=REVERSE_SQL)],
            state_operations=[
                migrations.CreateModel(
                    name="PreviewImage",
                    fields=[
                        ("name", models.CharField(max_length=80, primary_key=True, serialize=False)),
                        ("content", models.BinaryField()),
                        ("content_type", models.CharField(max_length=20)),
                        ("width", models.PositiveIntegerField()),
                        ("height", models.PositiveIntegerField()),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                ),
                migrations.AddField(
                    model_name="link",
                    name="preview_image",
                    field=models.CharField(blank=True, db_default="", default="", editable=False, max_length=80),
                ),
                migrations.AddIndex(
                    model_name="link",
                    index=models.Index(
                        condition=models.Q(("preview_image", ""), _negated=True),
                        fields=["preview_image"],
                        name="link_preview_image",
                    ),
                ),
            ],
        ),
    ]

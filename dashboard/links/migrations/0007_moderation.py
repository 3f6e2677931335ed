"""A link stopped by the service's staff (Link.blocked, moderation/): its
columns, as sql/links.sql has them. A new database has them from 0001
already, hence IF NOT EXISTS; the model's state is Django's alone."""

from django.db import migrations, models

SQL = (
    "ALTER TABLE links_link ADD COLUMN IF NOT EXISTS blocked varchar(500) DEFAULT '' NOT NULL, "
    "ADD COLUMN IF NOT EXISTS blocked_at timestamptz NULL, "
    "ADD COLUMN IF NOT EXISTS blocked_for varchar(5) DEFAULT '' NOT NULL"
)


class Migration(migrations.Migration):
    dependencies = [
        ("links", "0006_link_listed"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    SQL,
                    reverse_sql="ALTER TABLE links_link DROP COLUMN blocked, DROP COLUMN blocked_at, DROP COLUMN blocked_for",
                )
            ],
            state_operations=[
                migrations.AddField(
                    model_name="link",
                    name="blocked",
                    field=models.CharField(blank=True, db_default="", default="", editable=False, max_length=500),
                ),
                migrations.AddField(
                    model_name="link",
                    name="blocked_at",
                    field=models.DateTimeField(blank=True, editable=False, null=True),
                ),
                migrations.AddField(
                    model_name="link",
                    name="blocked_for",
                    field=models.CharField(
                        blank=True,
                        choices=[
                            ("link", "the link"),
                            ("team", "its team's suspension"),
                            ("owner", "its owner's suspension"),
                        ],
                        db_default="",
                        default="",
                        editable=False,
                        max_length=5,
                    ),
                ),
            ],
        ),
    ]

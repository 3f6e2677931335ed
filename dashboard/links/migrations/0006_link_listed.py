"""Why a link's destination is listed (Link.listed, links/flags.py): its
column, as sql/links.sql has it. A new database has it from 0001 already,
hence IF NOT EXISTS; the model's state is Django's alone. A constant
default: PostgreSQL adds it without rewriting the table."""

from django.db import migrations, models

SQL = "ALTER TABLE links_link ADD COLUMN IF NOT EXISTS listed varchar(300) DEFAULT '' NOT NULL"


class Migration(migrations.Migration):
    dependencies = [
        ("links", "0005_option_words"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SQL, reverse_sql="ALTER TABLE links_link DROP COLUMN listed")],
            state_operations=[
                migrations.AddField(
                    model_name="link",
                    name="listed",
                    field=models.CharField(blank=True, db_default="", default="", editable=False, max_length=300),
                ),
            ],
        ),
    ]

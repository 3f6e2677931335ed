"""A password that `make run` generated for the first admin, to be replaced
at the first sign-in (accounts.models.GeneratedPassword): its table, as
sql/accounts.sql has it. A new database has it from 0001 already, hence IF
NOT EXISTS; the model's state is Django's alone."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TABLE = """
CREATE TABLE IF NOT EXISTS accounts_generatedpassword (
    user_id  integer NOT NULL PRIMARY KEY
        CONSTRAINT accounts_generatedpassword_user_id_f02317c2_fk_auth_user_id REFERENCES auth_user (id)
        DEFERRABLE INITIALLY DEFERRED,
    password varchar(128) NOT NULL
);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(TABLE, reverse_sql=migrations.RunSQL.noop)],
            state_operations=[
                migrations.CreateModel(
                    name="GeneratedPassword",
                    fields=[
                        (
                            "user",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                primary_key=True,
                                related_name="generated_password",
                                serialize=False,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        ("password", models.CharField(max_length=128)),
                    ],
                ),
            ],
        ),
    ]

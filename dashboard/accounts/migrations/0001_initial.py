"""The table of accounts: sql/accounts.sql."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        apply_sql(
            "accounts.sql",
            reverse_sql="DROP TABLE accounts_sessionuse",
            state_operations=[
                migrations.CreateModel(
                    name="SessionUse",
                    fields=[
                        ("session_key", models.CharField(max_length=40, primary_key=True, serialize=False)),
                        ("user_agent", models.CharField(blank=True, max_length=200)),
                        ("last_used_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="session_uses",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                ),
            ],
        ),
    ]

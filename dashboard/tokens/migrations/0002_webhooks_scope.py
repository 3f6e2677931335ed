"""Tokens of the `webhooks` scope (webhooks/)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0003_auditentry_team_renamed"),
        ("tokens", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="apitoken",
            name="api_token_scope",
        ),
        migrations.AlterField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[("read", "read-only"), ("write", "read-write"), ("webhooks", "read and manage webhooks")],
                default="read",
                max_length=8,
            ),
        ),
        migrations.AddConstraint(
            model_name="apitoken",
            constraint=models.CheckConstraint(
                condition=models.Q(("scope__in", ["read", "write", "webhooks"])), name="api_token_scope"
            ),
        ),
    ]

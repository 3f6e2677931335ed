"""The tables of web: sql/preferences.sql."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        apply_sql("preferences.sql", state_operations=[
                migrations.CreateModel(
                    name='Preferences',
                    fields=[
                        ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='preferences', serialize=False, to=settings.AUTH_USER_MODEL)),
                        ('time_zone', models.CharField(blank=True, max_length=64)),
                    ],
                ),
        ]),
    ]

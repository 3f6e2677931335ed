"""The tables of reports and bans: sql/moderation.sql."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('links', '0007_moderation'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        apply_sql(
            "moderation.sql",
            reverse_sql="DROP TABLE moderation_report; DROP TABLE moderation_ban",
            state_operations=[
        migrations.CreateModel(
            name='Ban',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('domain', models.CharField(max_length=253, unique=True)),
                ('reason', models.CharField(blank=True, max_length=500)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['domain'],
            },
        ),
        migrations.CreateModel(
            name='Report',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('short_url', models.CharField(max_length=500)),
                ('host', models.CharField(max_length=253)),
                ('slug', models.CharField(max_length=64)),
                ('reason', models.CharField(choices=[('phishing', 'phishing: it asks for passwords or payment details'), ('malware', 'malware: it installs or downloads something harmful'), ('spam', 'spam'), ('illegal', 'illegal content'), ('other', 'something else')], max_length=10)),
                ('details', models.TextField(blank=True, max_length=2000)),
                ('email', models.EmailField(blank=True, max_length=254)),
                ('address', models.GenericIPAddressField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('status', models.CharField(choices=[('open', 'open'), ('dismissed', 'dismissed'), ('acted', 'acted on')], default='open', max_length=10)),
                ('outcome', models.CharField(blank=True, max_length=200)),
                ('handled_at', models.DateTimeField(blank=True, null=True)),
                ('handled_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('link', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='links.link')),
            ],
            options={
                'ordering': ['-id'],
                'indexes': [models.Index(fields=['status', '-id'], name='report_status_newest')],
            },
        ),
            ],
        ),
    ]

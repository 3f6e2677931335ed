"""A webhook message may be of the event link.broken (health/): the
choices of Message.event_type, Django's state alone (no database change)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('webhooks', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='message',
            name='event_type',
            field=models.CharField(choices=[('link.created', 'link.created'), ('link.updated', 'link.updated'), ('link.deleted', 'link.deleted'), ('link.clicked', 'link.clicked'), ('link.limit_reached', 'link.limit_reached'), ('link.expired', 'link.expired'), ('link.broken', 'link.broken'), ('import.finished', 'import.finished'), ('webhook.test', 'webhook.test')], max_length=32),
        ),
    ]

"""The table of the screening lists: sql/screening.sql."""

from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):

    initial = True

    dependencies = [
    ]

    operations = [
        apply_sql(
            "screening.sql",
            reverse_sql="DROP TABLE screening_screenlist",
            state_operations=[
        migrations.CreateModel(
            name='ScreenList',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('allow', models.BooleanField(default=False)),
                ('source', models.TextField()),
                ('domains', models.BinaryField(default=b'')),
                ('urls', models.BinaryField(default=b'')),
                ('entries', models.IntegerField(default=0)),
                ('skipped', models.IntegerField(default=0)),
                ('digest', models.CharField(blank=True, max_length=64)),
                ('changed_at', models.DateTimeField(blank=True, null=True)),
                ('read_at', models.DateTimeField(blank=True, null=True)),
                ('error', models.TextField(blank=True)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('allow', 'name'), name='screening_list_once')],
            },
        ),
            ],
        ),
    ]

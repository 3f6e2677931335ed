"""The tables of SCIM provisioning: sql/scim.sql."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from slingshot.schema import apply_sql


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        apply_sql(
            "scim.sql",
            reverse_sql="DROP TABLE scim_scimmembership, scim_scimuser, scim_scimtoken, scim_scimgroup",
            state_operations=[
                migrations.CreateModel(
                    name='ScimGroup',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('display_name', models.CharField(max_length=200, unique=True)),
                        ('external_id', models.CharField(blank=True, max_length=255)),
                        ('resource', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                ),
                migrations.CreateModel(
                    name='ScimToken',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=100)),
                        ('key_hash', models.CharField(max_length=64, unique=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('last_used_at', models.DateTimeField(blank=True, null=True)),
                        ('revoked_at', models.DateTimeField(blank=True, null=True)),
                    ],
                ),
                migrations.CreateModel(
                    name='ScimUser',
                    fields=[
                        ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='scim', serialize=False, to=settings.AUTH_USER_MODEL)),
                        ('external_id', models.CharField(blank=True, max_length=255)),
                        ('resource', models.JSONField(default=dict)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('deleted_at', models.DateTimeField(blank=True, null=True)),
                    ],
                ),
                migrations.CreateModel(
                    name='ScimMembership',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('group', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='scim.scimgroup')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='scim_memberships', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'constraints': [models.UniqueConstraint(fields=('group', 'user'), name='scim_membership_once')],
                    },
                ),
            ],
        ),
    ]

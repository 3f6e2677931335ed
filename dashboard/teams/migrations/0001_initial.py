"""The tables of teams: sql/teams.sql."""

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
        apply_sql("teams.sql", reverse_sql="DROP TABLE teams_auditentry, teams_membership, teams_team", state_operations=[
        migrations.CreateModel(
            name='Team',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('personal_for', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='personal_team', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['name', 'id'],
            },
        ),
        migrations.CreateModel(
            name='Membership',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('viewer', 'viewer: reads links and reports'), ('editor', 'editor: also creates, changes, disables and deletes links'), ('admin', "admin: also manages members and the team's tokens")], max_length=6)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('user', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='teams.team')),
            ],
            options={
                'ordering': ['team', 'user'],
                'constraints': [models.UniqueConstraint(fields=('user', 'team'), name='membership_once'), models.CheckConstraint(condition=models.Q(('role__in', ['viewer', 'editor', 'admin'])), name='membership_role_valid')],
            },
        ),
        migrations.CreateModel(
            name='AuditEntry',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('actor_name', models.CharField(blank=True, max_length=150)),
                ('action', models.CharField(choices=[('team.created', 'created the team'), ('link.created', 'created a link'), ('link.changed', 'changed a link'), ('link.disabled', 'disabled a link'), ('link.enabled', 'enabled a link'), ('link.deleted', 'deleted a link'), ('member.added', 'added a member'), ('member.changed', "changed a member's role"), ('member.removed', 'removed a member'), ('token.created', 'created an API token'), ('token.revoked', 'revoked an API token')], max_length=20)),
                ('link_id', models.BigIntegerField(null=True)),
                ('slug', models.CharField(blank=True, max_length=64)),
                ('subject', models.CharField(blank=True, max_length=200)),
                ('changes', models.JSONField(default=dict)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('actor', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('team', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='audit_entries', to='teams.team')),
            ],
            options={
                'verbose_name_plural': 'audit entries',
                'ordering': ['-id'],
                'indexes': [models.Index(fields=['team', '-id'], name='audit_team_newest')],
            },
        ),
    ]),
    ]

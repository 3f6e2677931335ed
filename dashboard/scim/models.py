import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class ScimToken(models.Model):
    """A bearer token of an identity provider's SCIM client (`manage.py
    create_scim_token`): its SHA-256 alone is kept. Its tables are in
    sql/scim.sql."""

    name = models.CharField(max_length=100)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name


class ScimUser(models.Model):
    """What the provider said of a person, beside the Django user it
    provisions (userName, name, e-mail and active mirror into it): the
    User resource as last written, its externalId, and whether the provider
    deleted it (the person is then deactivated, not removed: their links and
    audit entries stay)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="scim"
    )
    external_id = models.CharField(max_length=255, blank=True)
    resource = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"SCIM {self.user}"


class ScimGroup(models.Model):
    """A group at the provider, with its members: its displayName is the
    group that teams.GroupRole maps to a role (teams/groups.py)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    display_name = models.CharField(max_length=200, unique=True)
    external_id = models.CharField(max_length=255, blank=True)
    resource = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.display_name


class ScimMembership(models.Model):
    group = models.ForeignKey(ScimGroup, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scim_memberships")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["group", "user"], name="scim_membership_once")]

    def __str__(self) -> str:
        return f"{self.user} in {self.group}"

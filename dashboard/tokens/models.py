from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    """A person's API token for one team: it reaches that team only, with no
    more than its person's role there (teams/access.py). Only a SHA-256 of
    the token is stored: it cannot be shown again, only revoked. `prefix`
    (the first characters) lets people tell their tokens apart."""

    class Scope(models.TextChoices):
        READ = "read", "read-only"
        WRITE = "write", "read-write"
        # Reads as `read` does, and manages the team's webhooks (its person an editor there at least).
        WEBHOOKS = "webhooks", "read and manage webhooks"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.READ)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "api_apitoken"  # made by the api app before tokens had one of their own
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(scope__in=["read", "write", "webhooks"]), name="api_token_scope")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_usable(self, now=None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

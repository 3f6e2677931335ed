from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils import timezone

from .validation import REDIRECT_STATUSES, SLUG_MAX_LENGTH, validate_slug, validate_tags, validate_target_url


class Link(models.Model):
    slug = models.CharField(max_length=SLUG_MAX_LENGTH, unique=True, validators=[validate_slug])
    url = models.TextField("target URL", validators=[validate_target_url])
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="links")
    title = models.CharField(max_length=200, blank=True)
    tags = ArrayField(models.CharField(max_length=50), default=list, blank=True, size=20, validators=[validate_tags])
    redirect_status = models.PositiveSmallIntegerField(
        choices=[(status, str(status)) for status in REDIRECT_STATUSES], default=302
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    forward_query = models.BooleanField(default=False)
    is_active = models.BooleanField("active", default=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"]), GinIndex(fields=["tags"], name="link_tags_gin")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(redirect_status__in=REDIRECT_STATUSES), name="link_redirect_status_valid"
            ),
            models.CheckConstraint(condition=models.Q(slug__regex=r"^[A-Za-z0-9_-]{1,64}$"), name="link_slug_shape"),
        ]

    def __str__(self) -> str:
        return self.slug


class LinkOutbox(models.Model):
    """A slug whose state must reach Redis, written in the same transaction as
    the change itself; the publisher delivers rows in id order and deletes
    them once Redis has taken the change (links/publishing.py)."""

    id = models.BigAutoField(primary_key=True)
    slug = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"outbox #{self.id}: {self.slug}"

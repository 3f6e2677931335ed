from django.conf import settings
from django.db import models
from django.utils import timezone

from .validation import REDIRECT_STATUSES, SLUG_MAX_LENGTH, validate_slug, validate_target_url


class Link(models.Model):
    slug = models.CharField(max_length=SLUG_MAX_LENGTH, unique=True, validators=[validate_slug])
    url = models.TextField("target URL", validators=[validate_target_url])
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="links")
    title = models.CharField(max_length=200, blank=True)
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
        indexes = [models.Index(fields=["owner", "-created_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(redirect_status__in=REDIRECT_STATUSES), name="link_redirect_status_valid"
            ),
            models.CheckConstraint(condition=models.Q(slug__regex=r"^[A-Za-z0-9_-]{1,64}$"), name="link_slug_shape"),
        ]

    def __str__(self) -> str:
        return self.slug

from django.conf import settings
from django.db import models
from django.utils import timezone


class Reason(models.TextChoices):
    PHISHING = "phishing", "phishing: it asks for passwords or payment details"
    MALWARE = "malware", "malware: it installs or downloads something harmful"
    SPAM = "spam", "spam"
    ILLEGAL = "illegal", "illegal content"
    OTHER = "other", "something else"


class Status(models.TextChoices):
    OPEN = "open", "open"
    DISMISSED = "dismissed", "dismissed"
    ACTED = "acted", "acted on"


class Report(models.Model):
    """A visitor's report of a short URL (a short domain's /report page,
    moderation/report_page.py), and what the staff did about it. The link
    is kept as a foreign key while it lives and as its domain and slug
    always. Its table is in sql/moderation.sql."""

    id = models.BigAutoField(primary_key=True)
    short_url = models.CharField(max_length=500)  # as the visitor gave it
    host = models.CharField(max_length=253)  # the short domain it names
    slug = models.CharField(max_length=64)
    link = models.ForeignKey("links.Link", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=10, choices=Reason.choices)
    details = models.TextField(max_length=2000, blank=True)
    email = models.EmailField(blank=True)  # the reporter's, if they gave one
    address = models.GenericIPAddressField(null=True, blank=True)  # anonymised as clicks' are
    created_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    # What the staff did ("disabled the link", …), by whom and when.
    outcome = models.CharField(max_length=200, blank=True)
    handled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    handled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "-id"], name="report_status_newest")]

    def __str__(self) -> str:
        return f"report {self.pk} of {self.short_url}"


class Ban(models.Model):
    """A destination domain the staff banned: it and its subdomains are on
    the local blocklist (screening, the list "staff bans"), every link to
    it flagged. Lifted, it is deleted. Its table is in sql/moderation.sql."""

    id = models.BigAutoField(primary_key=True)
    domain = models.CharField(max_length=253, unique=True)
    reason = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["domain"]

    def __str__(self) -> str:
        return self.domain

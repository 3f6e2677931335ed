from django.db import models
from django.db.models import Q


class Status(models.TextChoices):
    OK = "ok"
    BROKEN = "broken"


class Reason(models.TextChoices):
    """Why a destination counts as broken (health/probe.py decides)."""

    DNS = "dns", "DNS failure"
    HTTP_4XX = "http_4xx", "4xx answer"
    HTTP_5XX = "http_5xx", "5xx answer"
    TLS = "tls", "TLS error"
    TOO_MANY_REDIRECTS = "too_many_redirects", "too many redirects"
    TIMEOUT = "timeout", "timeout"
    CONNECT = "connect", "no connection"
    REFUSED_ADDRESS = "refused_address", "private address"


class LinkHealth(models.Model):
    """The last check of a link's destination by `manage.py check_links`
    (health/services.py): one row per link, from its first check on.
    `broken_since` is the first check of the run of broken ones the link
    is in; a check that finds it working clears it. A link given another
    destination loses its row (health/apps.py). Its table is in
    sql/health.sql."""

    link = models.OneToOneField("links.Link", on_delete=models.CASCADE, primary_key=True, related_name="health")
    url = models.TextField()  # the destination as checked: a link given another has none until checked again
    checked_at = models.DateTimeField()
    status = models.CharField(max_length=6, choices=Status.choices)
    reason = models.CharField(max_length=20, choices=Reason.choices, blank=True)  # '' while ok
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)  # the last answer's, if one came
    detail = models.CharField(max_length=300, blank=True)  # a sentence for the team, never the server's own words
    final_url = models.TextField(blank=True)  # where the redirects led, the last URL asked
    broken_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(status__in=Status.values), name="health_status_valid"),
            models.CheckConstraint(
                condition=Q(status=Status.OK, reason="", broken_since__isnull=True)
                | (Q(status=Status.BROKEN, broken_since__isnull=False) & ~Q(reason="")),
                name="health_broken_has_reason_and_since",
            ),
        ]

    def __str__(self) -> str:
        return f"link {self.link_id}: {self.status}{f' ({self.reason})' if self.reason else ''}"

    @property
    def broken(self) -> bool:
        return self.status == Status.BROKEN

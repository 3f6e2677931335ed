"""A team's webhooks, the messages made for them, and each attempt to
deliver one (docs/webhooks.md). The tables are sql/webhooks.sql's."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from .event_types import EVENT_TYPES


class Webhook(models.Model):
    """An endpoint of a team's, sent the events it subscribes to, signed as
    the Standard Webhooks spec has it. `secret` is the signing secret
    (`whsec_...`), sealed with a key derived from SECRET_KEY; after a
    rotation `previous_secret` signs beside it until `previous_until`."""

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField(max_length=2048)
    description = models.CharField(max_length=200, blank=True, default="")
    events = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)
    # Why it was disabled by the deliverer (a 410, or a day of failures); "" otherwise.
    disabled_reason = models.CharField(max_length=300, blank=True, default="")
    secret = models.BinaryField()
    previous_secret = models.BinaryField(default=b"")
    previous_until = models.DateTimeField(null=True, blank=True)
    # The first failed attempt since the last delivered one; None while it delivers.
    failing_since = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.url


class Message(models.Model):
    """One event for one webhook: its body (JSON, signed as it is, the same
    at every attempt) and `msg_id`, the `webhook-id` of every attempt. A
    message waits (`next_attempt_at` set) until it is delivered or given up
    (`state`)."""

    class State(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="messages")
    msg_id = models.CharField(max_length=64)
    event_type = models.CharField(max_length=32, choices=[(name, name) for name in EVENT_TYPES])
    body = models.TextField()
    state = models.CharField(max_length=9, choices=State.choices, default=State.PENDING)
    attempts = models.IntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["webhook", "msg_id"], name="webhooks_message_once"),
            models.CheckConstraint(
                condition=Q(state__in=["pending", "delivered", "failed"]), name="webhooks_message_state"
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"], name="webhooks_message_due", condition=Q(next_attempt_at__isnull=False)
            ),
            models.Index(fields=["webhook", "-created_at"], name="webhooks_message_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.msg_id}"


class Attempt(models.Model):
    """One try at delivering a message: what the receiver answered (its
    status, the first KiB of its body) or why nothing came back (`error`)."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attempt_rows")
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="attempts")
    number = models.IntegerField()
    at = models.DateTimeField(default=timezone.now)
    status_code = models.IntegerField(null=True, blank=True)
    duration_ms = models.IntegerField()
    response = models.TextField(blank=True, default="")
    error = models.CharField(max_length=300, blank=True, default="")
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["webhook", "-id"], name="webhooks_attempt_recent")]

    def __str__(self) -> str:
        return f"attempt {self.number} of message {self.message_id}"


class ClickBatch(models.Model):
    """Clicks a batch of the click importer stored (clicks/importer.py), as
    the click ids of its stream entries (`ranges`: [id prefix, first
    number, count]), written in the batch's transaction while a webhook
    wants `link.clicked`: the deliverer makes a message of each of them
    that is stored, of a link whose team has such a webhook."""

    ranges = models.JSONField()
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"click batch {self.pk}"


class LinkMark(models.Model):
    """That a link's `link.expired` or `link.limit_reached` event was made,
    so that it is made once."""

    link_id = models.BigIntegerField()
    event_type = models.CharField(max_length=32)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["link_id", "event_type"], name="webhooks_linkmark_once")]

    def __str__(self) -> str:
        return f"{self.event_type} of link {self.link_id}"

"""Reads of webhooks and their delivery log, as far as the reader manages them."""

from django.db.models import QuerySet

from teams import access

from .models import Attempt, Webhook


def webhooks_managed_by(user) -> QuerySet[Webhook]:
    ids = access.webhook_team_ids(user)
    webhooks = Webhook.objects.all() if ids is None else Webhook.objects.filter(team_id__in=ids)
    return webhooks.select_related("team")


def deliveries_of(webhook: Webhook) -> QuerySet[Attempt]:
    """Its attempts, newest first, with their messages."""
    return Attempt.objects.filter(webhook=webhook).select_related("message").order_by("-id")

"""A team's webhooks, made and changed by its admins (teams.access.
manages_webhooks): each service checks the actor and validates what it is
given before it writes anything."""

import socket
from datetime import UTC, datetime

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from slingshot import sealing
from slingshot.outbound import OutboundError, allowed_addresses, any_address, check_url, is_public_address
from teams import access
from teams.models import Team

from . import event_types as types
from .delivery import PREVIOUS_SECRET_FOR, SECRET_PURPOSE
from .events import body, new_msg_id
from .models import Attempt, Message, Webhook
from .signing import new_secret

URL_MAX = 2048
DESCRIPTION_MAX = 200


def require_manager(actor, team_id: int) -> None:
    if not access.manages_webhooks(actor, team_id):
        raise PermissionDenied("A team's webhooks are managed by its admins (a token: write or webhooks scope).")


def check_webhook_url(url: str) -> str:
    """The URL, or ValidationError: https (or http with
    WEBHOOKS_ALLOW_HTTP), and a host whose every address is public (or any
    with WEBHOOKS_ALLOW_PRIVATE). Checked again at each connection, on the
    address connected to (slingshot/outbound/guarded.py)."""
    if not isinstance(url, str) or not url.strip():
        raise ValidationError({"url": "Give the https:// address to send events to."})
    url = url.strip()
    if len(url) > URL_MAX:
        raise ValidationError({"url": f"At most {URL_MAX} characters."})
    try:
        scheme, host, port = check_url(url)
    except OutboundError as exc:
        raise ValidationError({"url": str(exc)}) from None
    if scheme != "https" and not settings.WEBHOOKS_ALLOW_HTTP:
        raise ValidationError({"url": "A webhook's address must be https:// (WEBHOOKS_ALLOW_HTTP allows http://)."})
    policy = any_address if settings.WEBHOOKS_ALLOW_PRIVATE else is_public_address
    try:
        allowed_addresses(host, port, allowed=policy, timeout=5)
    except OutboundError as exc:
        raise ValidationError({"url": f"{exc}."}) from None
    except (OSError, socket.gaierror):
        raise ValidationError({"url": f"The host {host} cannot be resolved."}) from None
    return url


def check_events(events) -> list[str]:
    if not isinstance(events, list) or not events or not all(isinstance(name, str) for name in events):
        raise ValidationError({"events": "Give a list of one or more events."})
    unknown = sorted(set(events) - set(types.SUBSCRIBABLE))
    if unknown:
        raise ValidationError(
            {"events": f"Unknown events: {', '.join(unknown)}. Known: {', '.join(types.SUBSCRIBABLE)}."}
        )
    return sorted(set(events), key=types.SUBSCRIBABLE.index)


def _description(text) -> str:
    if not isinstance(text, str):
        raise ValidationError({"description": "Give text."})
    if len(text) > DESCRIPTION_MAX:
        raise ValidationError({"description": f"At most {DESCRIPTION_MAX} characters."})
    return text.strip()


def _seal(secret: str) -> bytes:
    return sealing.seal(secret, purpose=SECRET_PURPOSE)


@transaction.atomic
def webhook_create(*, actor, team: Team, url: str, events: list[str], description: str = "") -> tuple[Webhook, str]:
    """A new webhook of `team` and its signing secret, which is shown only now."""
    require_manager(actor, team.pk)
    url, events, description = check_webhook_url(url), check_events(events), _description(description)
    secret = new_secret()
    webhook = Webhook.objects.create(
        team=team,
        url=url,
        events=events,
        description=description,
        secret=_seal(secret),
        created_by=actor if actor.pk else None,
    )
    return webhook, secret


@transaction.atomic
def webhook_update(*, actor, webhook: Webhook, **changes) -> Webhook:
    """Changes `url`, `events`, `description` or `enabled`. Enabling a
    webhook the deliverer disabled sends what waits for it again."""
    require_manager(actor, webhook.team_id)
    unknown = set(changes) - {"url", "events", "description", "enabled"}
    if unknown:
        raise TypeError("not editable: " + ", ".join(sorted(unknown)))
    if "url" in changes:
        webhook.url = check_webhook_url(changes["url"])
    if "events" in changes:
        webhook.events = check_events(changes["events"])
    if "description" in changes:
        webhook.description = _description(changes["description"])
    enabling = changes.get("enabled") is True and not webhook.enabled
    if "enabled" in changes:
        if not isinstance(changes["enabled"], bool):
            raise ValidationError({"enabled": "true or false."})
        webhook.enabled = changes["enabled"]
    if enabling:
        webhook.disabled_reason, webhook.failing_since = "", None
    webhook.updated_at = datetime.now(UTC)
    webhook.save()
    pending = Message.objects.filter(webhook=webhook, state=Message.State.PENDING)
    if enabling:
        pending.update(next_attempt_at=datetime.now(UTC))
    elif changes.get("enabled") is False:
        pending.update(next_attempt_at=None)
    return webhook


@transaction.atomic
def webhook_delete(*, actor, webhook: Webhook) -> None:
    """The webhook, its messages and its log."""
    require_manager(actor, webhook.team_id)
    Attempt.objects.filter(webhook=webhook)._raw_delete(Attempt.objects.db)
    Message.objects.filter(webhook=webhook)._raw_delete(Message.objects.db)
    webhook.delete()


@transaction.atomic
def webhook_rotate_secret(*, actor, webhook: Webhook) -> str:
    """A new signing secret, shown only now; the old one signs beside it for 24 hours."""
    require_manager(actor, webhook.team_id)
    webhook = Webhook.objects.select_for_update().get(pk=webhook.pk)
    secret = new_secret()
    now = datetime.now(UTC)
    webhook.previous_secret, webhook.previous_until = webhook.secret, now + PREVIOUS_SECRET_FOR
    webhook.secret, webhook.updated_at = _seal(secret), now
    webhook.save(update_fields=["secret", "previous_secret", "previous_until", "updated_at"])
    return secret


@transaction.atomic
def webhook_send_test(*, actor, webhook: Webhook) -> Message:
    """A `webhook.test` message, sent like any other."""
    require_manager(actor, webhook.team_id)
    if not webhook.enabled:
        raise ValidationError({"enabled": "The webhook is disabled: enable it to send to it."})
    data = {"webhook": {"id": webhook.pk, "url": webhook.url}, "message": "A test event from Slingshot."}
    return Message.objects.create(
        webhook=webhook,
        msg_id=new_msg_id(),
        event_type=types.WEBHOOK_TEST,
        body=body(types.WEBHOOK_TEST, data),
        next_attempt_at=datetime.now(UTC),
    )


@transaction.atomic
def message_redeliver(*, actor, message: Message) -> Message:
    """Sends a message again, with its id and body, whatever came of it before."""
    require_manager(actor, message.webhook.team_id)
    if not message.webhook.enabled:
        raise ValidationError({"enabled": "The webhook is disabled: enable it to send to it."})
    Message.objects.filter(pk=message.pk).update(state=Message.State.PENDING, next_attempt_at=datetime.now(UTC))
    message.refresh_from_db()
    return message

"""Events made into messages for the webhooks that want them, in the
transaction of what caused them (docs/webhooks.md, "Events"): a link's
change (links.signals.link_changed), the clicks a batch of the click
importer stored (clicks.signals.batch_stored, as a ClickBatch the
deliverer makes messages of: clicks.py), an import that finished
(importers.signals.import_finished), a destination found broken
(health.signals.link_broken). The apps below know nothing of
webhooks: they send their signals, and connect() hears them."""

import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from api.times import iso

from . import event_types as types
from .models import Message, Webhook

DataFn = Callable[[], dict[str, Any]]


def new_msg_id() -> str:
    return "msg_" + secrets.token_hex(16)


def body(event_type: str, data: dict[str, Any], at: datetime | None = None) -> str:
    """A message's JSON, as the Standard Webhooks spec has it: `type`,
    `timestamp`, `data` (in which an orjson.Fragment is JSON made before)."""
    return orjson.dumps({"type": event_type, "timestamp": iso(at or datetime.now(UTC)), "data": data}).decode()


def subscribed(team_id: int, event_type: str) -> list[int]:
    """The ids of the team's enabled webhooks that want `event_type`."""
    return list(
        Webhook.objects.filter(team_id=team_id, enabled=True, events__contains=[event_type]).values_list(
            "id", flat=True
        )
    )


def emit(team_id: int, event_type: str, data: DataFn) -> int:
    """Makes a message of the event for each of the team's webhooks that
    want it, in the caller's transaction; `data` is called only if one
    does. Returns how many."""
    webhook_ids = subscribed(team_id, event_type)
    if not webhook_ids:
        return 0
    text = body(event_type, data())
    Message.objects.bulk_create(
        [
            Message(
                webhook_id=webhook_id, msg_id=new_msg_id(), event_type=event_type, body=text, next_attempt_at=_now()
            )
            for webhook_id in webhook_ids
        ]
    )
    return len(webhook_ids)


def link_data(link) -> dict[str, Any]:
    """`{"link": ...}`, the link as /api/v1 shows it."""
    from api.link_serializers import LinkSerializer

    return {"link": dict(LinkSerializer(link).data)}


def _now() -> datetime:
    return datetime.now(UTC)


_LINK_EVENTS = {"created": types.LINK_CREATED, "updated": types.LINK_UPDATED, "deleted": types.LINK_DELETED}


def on_link_changed(sender, *, link, event: str, **kwargs) -> None:
    emit(link.team_id, _LINK_EVENTS[event], lambda: link_data(link))


def on_import_finished(sender, *, team_id: int, summary: dict[str, Any], **kwargs) -> None:
    emit(team_id, types.IMPORT_FINISHED, lambda: {"import": summary})


def on_link_broken(sender, *, link, health, **kwargs) -> None:
    emit(
        link.team_id,
        types.LINK_BROKEN,
        lambda: {**link_data(link), "reason": health.reason, "detail": health.detail},
    )


def connect() -> None:
    from clicks.signals import batch_stored
    from health.signals import link_broken
    from importers.signals import import_finished
    from links.signals import link_changed

    from . import shlink_updates
    from .clicks import on_batch_stored

    link_changed.connect(on_link_changed, dispatch_uid="webhooks.link_changed")
    batch_stored.connect(on_batch_stored, dispatch_uid="webhooks.batch_stored")
    link_changed.connect(shlink_updates.on_link_changed, dispatch_uid="webhooks.shlink_link_changed")
    batch_stored.connect(shlink_updates.on_batch_stored, dispatch_uid="webhooks.shlink_batch_stored")
    import_finished.connect(on_import_finished, dispatch_uid="webhooks.import_finished")
    link_broken.connect(on_link_broken, dispatch_uid="webhooks.link_broken")

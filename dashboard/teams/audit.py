"""The audit log's one writer: every service that changes a link, a
membership, a token or a team's name calls record() in its own
transaction, so an entry exists exactly when its change does."""

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import models

from slingshot.inserts import insert

from .models import Action, AuditEntry


def jsonable(value: Any) -> Any:
    """A field's value as the audit log keeps it: times in ISO 8601, objects by their id."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, models.Model):
        return value.pk
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    return value


def changes_between(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, list]:
    """{field: [before, after]} for each field of `after` whose value differs."""
    return {
        name: [jsonable(before.get(name)), jsonable(value)]
        for name, value in after.items()
        if jsonable(before.get(name)) != jsonable(value)
    }


def record(
    *,
    team_id: int,
    actor: AbstractBaseUser | None,
    action: Action,
    link_id: int | None = None,
    slug: str = "",
    subject: str = "",
    changes: Mapping[str, list] | None = None,
) -> AuditEntry:
    """Writes one entry; `actor` None is the system (a management command)."""
    person = actor if actor is not None and actor.is_authenticated else None
    entry = AuditEntry(
        team_id=team_id,
        actor=person,
        actor_name=person.get_username() if person else "",
        action=action,
        link_id=link_id,
        slug=slug,
        subject=subject[:200],
        changes=dict(changes or {}),
    )
    insert(entry)
    return entry

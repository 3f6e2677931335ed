"""Writes to links. Every change goes through here so it is validated the
same way and published to Redis once the transaction has committed."""

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, connection, transaction

from clicks.selectors import storable_offset
from clicks.services import clicks_delete_for_link

from . import slugs
from .models import Link, LinkOutbox
from .publishing import OUTBOX_CHANNEL, deliver_after_commit

_SLUG_ATTEMPTS = 10

EDITABLE_FIELDS = frozenset(
    {"slug", "url", "title", "tags", "redirect_status", "expires_at", "forward_query", "is_active"}
)
SLUG_TAKEN_MESSAGE = "Link with this Slug already exists."


def _publish(slug: str) -> None:
    """Records the change in the outbox, in the caller's transaction, and
    wakes the publisher when that transaction commits."""
    LinkOutbox.objects.create(slug=slug)
    with connection.cursor() as cursor:
        cursor.execute(f"NOTIFY {OUTBOX_CHANNEL}")
    if settings.LINK_PUBLISH_INLINE:
        transaction.on_commit(deliver_after_commit)


def _validate(link: Link) -> None:
    # Field validators, and an expiry PostgreSQL can store: the owner comes
    # from the caller, the check constraints repeat the field validators, and
    # a taken slug is found by the unique index itself (_save), which a
    # concurrent insert cannot race.
    link.full_clean(exclude=["owner"], validate_unique=False, validate_constraints=False)
    if link.expires_at is not None and not storable_offset(link.expires_at):
        raise ValidationError({"expires_at": "The UTC offset must be within ±15:59."})


def _save(link: Link, *, regenerate_slug: bool, **save_options) -> None:
    """Saves in a savepoint. A taken slug is a ValidationError, or, for a
    generated one, a new slug and another try."""
    for _ in range(_SLUG_ATTEMPTS if regenerate_slug else 1):
        try:
            with transaction.atomic():
                link.save(**save_options)
            return
        except IntegrityError:
            if not Link.objects.filter(slug=link.slug).exclude(pk=link.pk).exists():
                raise
            if not regenerate_slug:
                raise ValidationError({"slug": ValidationError(SLUG_TAKEN_MESSAGE, code="unique")}) from None
            link.slug = slugs.generate_slug(settings.LINK_SLUG_LENGTH)
    raise IntegrityError(f"could not find a free slug after {_SLUG_ATTEMPTS} attempts")


def link_validate(
    *,
    url: str,
    slug: str | None = None,
    title: str = "",
    tags: list[str] | None = None,
    redirect_status: int = 302,
    expires_at: datetime | None = None,
    forward_query: bool = False,
    is_active: bool = True,
) -> Link:
    """The link link_create would save, unsaved and without an owner, after
    the same checks; raises ValidationError with messages per field. Reads
    no table, so whether a slug is taken is left to the save (or to
    links.selectors.taken_slugs, asked beforehand for many slugs at once).
    Without a slug, one is generated."""
    link = Link(
        slug=slug or slugs.generate_slug(settings.LINK_SLUG_LENGTH),
        url=url,
        title=title,
        tags=list(tags or []),
        redirect_status=redirect_status,
        expires_at=expires_at,
        forward_query=forward_query,
        is_active=is_active,
    )
    _validate(link)
    return link


@transaction.atomic
def link_create(
    *,
    owner: AbstractBaseUser,
    url: str,
    slug: str | None = None,
    title: str = "",
    tags: list[str] | None = None,
    redirect_status: int = 302,
    expires_at: datetime | None = None,
    forward_query: bool = False,
    is_active: bool = True,
) -> Link:
    link = link_validate(
        url=url,
        slug=slug,
        title=title,
        tags=tags,
        redirect_status=redirect_status,
        expires_at=expires_at,
        forward_query=forward_query,
        is_active=is_active,
    )
    link.owner = owner
    _save(link, regenerate_slug=not slug)
    _publish(link.slug)
    return link


class Outcome(enum.StrEnum):
    CREATED = "created"
    INVALID = "invalid"
    SLUG_TAKEN = "slug_taken"


@dataclass(frozen=True)
class BulkResult:
    outcome: Outcome
    link: Link | None = None  # the new link, when CREATED
    errors: dict[str, list[str]] = field(default_factory=dict)  # messages per field otherwise


@transaction.atomic
def link_bulk_create(*, owner: AbstractBaseUser, items: Iterable[Mapping[str, Any]]) -> list[BulkResult]:
    """Creates a link for each item (link_create's arguments but the owner),
    each in its own savepoint, so an item refused leaves the others be. One
    result per item, in their order; all the links commit together."""
    results = []
    for arguments in items:
        try:
            link = link_create(owner=owner, **arguments)
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {NON_FIELD_ERRORS: exc.messages}
            taken = any(error.code == "unique" for error in getattr(exc, "error_dict", {}).get("slug", []))
            results.append(BulkResult(outcome=Outcome.SLUG_TAKEN if taken else Outcome.INVALID, errors=errors))
        else:
            results.append(BulkResult(outcome=Outcome.CREATED, link=link))
    return results


@transaction.atomic
def link_update(*, link: Link, **changes) -> Link:
    unknown = set(changes) - EDITABLE_FIELDS
    if unknown:
        raise TypeError("not editable: " + ", ".join(sorted(unknown)))
    old_slug = Link.objects.select_for_update().values_list("slug", flat=True).get(pk=link.pk)
    for name, value in changes.items():
        setattr(link, name, value)
    _validate(link)
    _save(link, regenerate_slug=False, update_fields=[*changes, "updated_at"])
    if link.slug != old_slug:
        _publish(old_slug)
    _publish(link.slug)
    return link


@transaction.atomic
def link_delete(*, link: Link) -> None:
    """Deletes the link with its clicks, rollups and totals. Deleting the
    row first waits for any import holding the link (importer.py), so
    that clicks it was storing go too."""
    slug, link_id = link.slug, link.pk
    link.delete()
    clicks_delete_for_link(link_id=link_id)
    _publish(slug)


BULK_ACTIONS = ("tag", "untag", "disable", "enable", "delete")


@transaction.atomic
def link_bulk_change(*, links: Iterable[Link], action: str, tag: str = "") -> int:
    """Tags, untags, disables, enables or deletes each link, through
    link_update and link_delete (so each change is published through the
    outbox like any other), all or none; returns how many links changed."""
    if action not in BULK_ACTIONS:
        raise ValueError(f"action must be one of {BULK_ACTIONS}, not {action!r}")
    if action in ("tag", "untag") and not tag:
        raise ValidationError({"tag": "Give the tag to add or take away."})
    changed = 0
    for link in links:
        if action == "delete":
            link_delete(link=link)
        elif action in ("disable", "enable"):
            if link.is_active == (action == "enable"):
                continue
            link_update(link=link, is_active=action == "enable")
        elif action == "tag":
            if tag in link.tags:
                continue
            link_update(link=link, tags=[*link.tags, tag])
        else:
            if tag not in link.tags:
                continue
            link_update(link=link, tags=[name for name in link.tags if name != tag])
        changed += 1
    return changed

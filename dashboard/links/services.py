"""Writes to links. Every change goes through here so it is validated the
same way and published to Redis once the transaction has committed."""

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.hashers import make_password
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, transaction

from clicks.selectors import storable_offset
from clicks.services import clicks_delete_for_link

from . import slugs
from .domains import default_domain
from .models import Domain, Link
from .outbox import publish_domain, publish_link

_SLUG_ATTEMPTS = 10

EDITABLE_FIELDS = frozenset(
    {
        "domain",
        "slug",
        "url",
        "title",
        "description",
        "tags",
        "redirect_status",
        "valid_since",
        "expires_at",
        "max_visits",
        "forward_query",
        "crawlable",
        "password",
        "is_active",
    }
)
SLUG_TAKEN_MESSAGE = "Link with this Slug already exists."
PASSWORD_MAX_LENGTH = 128


def link_password(raw: str | None) -> str:
    """What Link.password keeps of a password a person chose: a salted, slow
    hash (Django's PASSWORD_HASHERS), or "" for none (None or "")."""
    if not raw:
        return ""
    if not isinstance(raw, str) or len(raw) > PASSWORD_MAX_LENGTH:
        raise ValidationError({"password": f"A password is at most {PASSWORD_MAX_LENGTH} characters."})
    return make_password(raw)


def _publish(link: Link, *, robots: bool = False) -> None:
    """Records the change of the link in the outbox, in the caller's
    transaction, and of its domain's robots.txt too when it lists the link
    (or did)."""
    publish_link(link.domain.host, link.slug)
    if robots:
        publish_domain(link.domain.host)


def _validate(link: Link) -> None:
    # Field validators, and an expiry PostgreSQL can store: the owner and the
    # domain (a row) come from the caller, the check constraints repeat the
    # field validators, and a taken slug is found by the unique index itself
    # (_save), which a concurrent insert cannot race.
    link.full_clean(exclude=["owner", "domain"], validate_unique=False, validate_constraints=False)
    for name in ("valid_since", "expires_at"):
        moment = getattr(link, name)
        if moment is not None and not storable_offset(moment):
            raise ValidationError({name: "The UTC offset must be within ±15:59."})
    if link.valid_since and link.expires_at and link.valid_since >= link.expires_at:
        raise ValidationError({"expires_at": "Must be after valid_since."})


def _save(link: Link, *, regenerate_slug: bool, **save_options) -> None:
    """Saves in a savepoint. A taken slug is a ValidationError, or, for a
    generated one, a new slug and another try."""
    for _ in range(_SLUG_ATTEMPTS if regenerate_slug else 1):
        try:
            with transaction.atomic():
                link.save(**save_options)
            return
        except IntegrityError:
            if not Link.objects.filter(domain=link.domain, slug=link.slug).exclude(pk=link.pk).exists():
                raise
            if not regenerate_slug:
                raise ValidationError({"slug": ValidationError(SLUG_TAKEN_MESSAGE, code="unique")}) from None
            link.slug = slugs.generate_slug(settings.LINK_SLUG_LENGTH)
    raise IntegrityError(f"could not find a free slug after {_SLUG_ATTEMPTS} attempts")


def link_validate(
    *,
    url: str,
    slug: str | None = None,
    domain: Domain | None = None,
    title: str = "",
    description: str = "",
    tags: list[str] | None = None,
    redirect_status: int = 302,
    valid_since: datetime | None = None,
    expires_at: datetime | None = None,
    max_visits: int | None = None,
    forward_query: bool = False,
    crawlable: bool = False,
    password: str | None = None,
    is_active: bool = True,
) -> Link:
    """The link link_create would save, unsaved and without an owner, after
    the same checks; raises ValidationError with messages per field. Reads
    no table, so whether a slug is taken is left to the save (or to
    links.selectors.taken_slugs, asked beforehand for many slugs at once).
    Without a slug, one is generated; without a domain, the default domain's.
    A password is kept hashed (link_password)."""
    link = Link(
        domain=domain or default_domain(),
        slug=slug or slugs.generate_slug(settings.LINK_SLUG_LENGTH),
        url=url,
        title=title,
        description=description,
        tags=list(tags or []),
        redirect_status=redirect_status,
        valid_since=valid_since,
        expires_at=expires_at,
        max_visits=max_visits,
        forward_query=forward_query,
        crawlable=crawlable,
        password=link_password(password),
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
    domain: Domain | None = None,
    title: str = "",
    description: str = "",
    tags: list[str] | None = None,
    redirect_status: int = 302,
    valid_since: datetime | None = None,
    expires_at: datetime | None = None,
    max_visits: int | None = None,
    forward_query: bool = False,
    crawlable: bool = False,
    password: str | None = None,
    is_active: bool = True,
) -> Link:
    link = link_validate(
        url=url,
        slug=slug,
        domain=domain,
        title=title,
        description=description,
        tags=tags,
        redirect_status=redirect_status,
        valid_since=valid_since,
        expires_at=expires_at,
        max_visits=max_visits,
        forward_query=forward_query,
        crawlable=crawlable,
        password=password,
        is_active=is_active,
    )
    link.owner = owner
    _save(link, regenerate_slug=not slug)
    _publish(link, robots=link.crawlable)
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
    results, default = [], default_domain()
    for arguments in items:
        try:
            link = link_create(owner=owner, **{**arguments, "domain": arguments.get("domain") or default})
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {NON_FIELD_ERRORS: exc.messages}
            taken = any(error.code == "unique" for error in getattr(exc, "error_dict", {}).get("slug", []))
            results.append(BulkResult(outcome=Outcome.SLUG_TAKEN if taken else Outcome.INVALID, errors=errors))
        else:
            results.append(BulkResult(outcome=Outcome.CREATED, link=link))
    return results


@transaction.atomic
def link_update(*, link: Link, **changes) -> Link:
    """Changes the given fields (EDITABLE_FIELDS). `password` is the new
    password in clear, or None or "" to remove it."""
    unknown = set(changes) - EDITABLE_FIELDS
    if unknown:
        raise TypeError("not editable: " + ", ".join(sorted(unknown)))
    if "password" in changes:
        changes["password"] = link_password(changes["password"])
    old = Link.objects.select_for_update().select_related("domain").get(pk=link.pk)
    for name, value in changes.items():
        setattr(link, name, value)
    _validate(link)
    _save(link, regenerate_slug=False, update_fields=[*changes, "updated_at"])
    moved = (link.domain_id, link.slug) != (old.domain_id, old.slug)
    if moved:
        _publish(old, robots=old.crawlable)
    _publish(link, robots=link.crawlable or (old.crawlable and not moved))
    return link


@transaction.atomic
def link_delete(*, link: Link) -> None:
    """Deletes the link with its clicks, rollups and totals. Deleting the
    row first waits for any import holding the link (importer.py), so
    that clicks it was storing go too."""
    link_id = link.pk
    link.delete()
    clicks_delete_for_link(link_id=link_id)
    _publish(link, robots=link.crawlable)

"""Writes to links. Every change goes through here so it is validated the
same way and published to Redis once the transaction has committed."""
import secrets
import string
from datetime import datetime

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from .models import Link, LinkOutbox
from .publishing import deliver_after_commit

SLUG_ALPHABET = string.ascii_letters + string.digits
_SLUG_ATTEMPTS = 10

EDITABLE_FIELDS = frozenset(
    {"slug", "url", "title", "tags", "redirect_status", "expires_at", "forward_query", "is_active"}
)


def generate_slug(length: int | None = None) -> str:
    return "".join(secrets.choice(SLUG_ALPHABET) for _ in range(length or settings.LINK_SLUG_LENGTH))


def _publish(slug: str) -> None:
    """Records the change in the outbox, in the caller's transaction."""
    LinkOutbox.objects.create(slug=slug)
    transaction.on_commit(deliver_after_commit)


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
    fields = dict(
        owner=owner,
        url=url,
        title=title,
        tags=list(tags or []),
        redirect_status=redirect_status,
        expires_at=expires_at,
        forward_query=forward_query,
        is_active=is_active,
    )
    if slug:
        link = Link(slug=slug, **fields)
        link.full_clean()
        try:
            with transaction.atomic():
                link.save()
        except IntegrityError:
            # Taken by a concurrent request between full_clean and INSERT.
            raise ValidationError({"slug": ValidationError("Link with this Slug already exists.", code="unique")})
    else:
        link = _create_with_generated_slug(fields)
    _publish(link.slug)
    return link


def _create_with_generated_slug(fields: dict) -> Link:
    link = Link(slug=generate_slug(), **fields)
    link.full_clean(exclude=["slug"])
    for _ in range(_SLUG_ATTEMPTS):
        try:
            # A savepoint, so a collision with a concurrent insert can be retried.
            with transaction.atomic():
                link.save()
            return link
        except IntegrityError:
            if Link.objects.filter(slug=link.slug).exists():
                link.slug = generate_slug()
                link.pk = None
                continue
            raise
    raise IntegrityError("could not find a free slug after %d attempts" % _SLUG_ATTEMPTS)


@transaction.atomic
def link_update(*, link: Link, **changes) -> Link:
    unknown = set(changes) - EDITABLE_FIELDS
    if unknown:
        raise TypeError("not editable: %s" % ", ".join(sorted(unknown)))
    old_slug = Link.objects.select_for_update().values_list("slug", flat=True).get(pk=link.pk)
    for name, value in changes.items():
        setattr(link, name, value)
    link.full_clean(exclude=["owner"])
    link.save(update_fields=[*changes, "updated_at"])
    if link.slug != old_slug:
        _publish(old_slug)
    _publish(link.slug)
    return link


@transaction.atomic
def link_delete(*, link: Link) -> None:
    slug = link.slug
    link.delete()
    _publish(slug)

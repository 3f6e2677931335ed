"""Writes to links. Every change goes through here so it is validated the
same way and published to Redis once the transaction has committed."""
import secrets
import string
from datetime import datetime
from functools import partial

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction

from .models import Link
from .publishing import publish_after_commit

SLUG_ALPHABET = string.ascii_letters + string.digits
_SLUG_ATTEMPTS = 10

EDITABLE_FIELDS = frozenset({"slug", "url", "title", "redirect_status", "expires_at", "forward_query", "is_active"})


def generate_slug(length: int | None = None) -> str:
    return "".join(secrets.choice(SLUG_ALPHABET) for _ in range(length or settings.LINK_SLUG_LENGTH))


def _publish_on_commit(slug: str) -> None:
    transaction.on_commit(partial(publish_after_commit, slug))


@transaction.atomic
def link_create(
    *,
    owner: AbstractBaseUser,
    url: str,
    slug: str | None = None,
    title: str = "",
    redirect_status: int = 302,
    expires_at: datetime | None = None,
    forward_query: bool = False,
    is_active: bool = True,
) -> Link:
    fields = dict(
        owner=owner,
        url=url,
        title=title,
        redirect_status=redirect_status,
        expires_at=expires_at,
        forward_query=forward_query,
        is_active=is_active,
    )
    if slug:
        link = Link(slug=slug, **fields)
        link.full_clean()
        link.save()
    else:
        link = _create_with_generated_slug(fields)
    _publish_on_commit(link.slug)
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
        _publish_on_commit(old_slug)
    _publish_on_commit(link.slug)
    return link


@transaction.atomic
def link_delete(*, link: Link) -> None:
    slug = link.slug
    link.delete()
    _publish_on_commit(slug)

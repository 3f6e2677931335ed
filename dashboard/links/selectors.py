"""Reads of links, with the rule of who sees what in one place
(`links_visible_to`; docs/api.md, "Who may do what"): people see their own
links, with their clicks; superusers see everyone's. The staff flag opens
the Django admin and the operational figures of the overview, and shows no
one else's link."""

import ipaddress
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from functools import reduce
from operator import or_

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import connection
from django.db.models import BigIntegerField, F, Q, QuerySet
from django.db.models.functions import Coalesce
from rest_framework.filters import search_smart_split

from clicks.enrichment import anonymise
from clicks.models import Click

from .models import Link


def short_url(slug: str) -> str:
    """Where the edge serves a slug."""
    return settings.EDGE_BASE_URL.rstrip("/") + "/" + slug


def sees_every_link(user: AbstractBaseUser) -> bool:
    return user.is_active and user.is_superuser


def sees_operations(user: AbstractBaseUser) -> bool:
    """The importer's backlog and the edge's health, on the overview."""
    return user.is_active and (user.is_staff or user.is_superuser)


def links_visible_to(user: AbstractBaseUser) -> QuerySet[Link]:
    """The links a person may read and, with the API's write scope or in the
    pages and the admin, change."""
    links = Link.objects.all()
    if not sees_every_link(user):
        links = links.filter(owner=user)
    return links


def with_click_totals(links: QuerySet[Link]) -> QuerySet[Link]:
    """Annotates `clicks` and `human_clicks`, the all-time totals the importer
    keeps per link (one LEFT JOIN, so they can be sorted on)."""
    return links.annotate(
        clicks=Coalesce(F("click_totals__clicks"), 0, output_field=BigIntegerField()),
        human_clicks=Coalesce(F("click_totals__human_clicks"), 0, output_field=BigIntegerField()),
    )


SEARCH_FIELDS = ("slug", "title", "url")
# What link_search sorts by; each also descending, with a leading '-'.
ORDERING_FIELDS = ("created_at", "clicks", "slug")


def link_search(
    *,
    user: AbstractBaseUser,
    query: str = "",
    tag: str | None = None,
    is_active: bool | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    ordering: str | Sequence[str] = ("-created_at",),
) -> QuerySet[Link]:
    """The links the user sees, with their click totals (with_click_totals).

    `query` is split into words as the API's `search` parameter documents
    it: spaces and commas separate words, a quoted phrase is one word
    (rest_framework.filters.search_smart_split). Every word must appear in
    the slug, title or target URL, case aside. `tag`, `is_active` and the
    creation range [created_after, created_before) filter when given.
    `ordering` takes ORDERING_FIELDS, '-' for descending, and raises
    ValueError for anything else; ties go by id, in the first key's direction."""
    keys = [ordering] if isinstance(ordering, str) else list(ordering or ("-created_at",))
    unknown = [key for key in keys if key.removeprefix("-") not in ORDERING_FIELDS]
    if unknown:
        raise ValueError(f"cannot order links by {', '.join(unknown)}")
    links = links_visible_to(user)
    for word in search_smart_split(query):
        links = links.filter(reduce(or_, (Q(**{f"{name}__icontains": word}) for name in SEARCH_FIELDS)))
    if tag:
        links = links.filter(tags__contains=[tag])
    if is_active is not None:
        links = links.filter(is_active=is_active)
    if created_after:
        links = links.filter(created_at__gte=created_after)
    if created_before:
        links = links.filter(created_at__lt=created_before)
    return with_click_totals(links).order_by(*keys, "-id" if keys[0].startswith("-") else "id")


def taken_slugs(*, slugs: Iterable[str]) -> set[str]:
    """Those of the slugs that a link has, whoever owns it; one query."""
    with connection.cursor() as cursor:
        # = ANY(array): one parameter, however many slugs (IN would take one each).
        cursor.execute(f"SELECT slug FROM {Link._meta.db_table} WHERE slug = ANY(%s)", [list(set(slugs))])
        return {slug for (slug,) in cursor.fetchall()}


# What a link does with a request now, as the pages show it: link_state's answers.
LINK_STATES = {"active": "Active", "expired": "Expired", "disabled": "Disabled"}


def link_state(link: Link, now: datetime | None = None) -> str:
    """The one answer to "what does this link do now" for the pages (a key
    of LINK_STATES): disabled before expired, as the edge checks them."""
    if not link.is_active:
        return "disabled"
    if link.expires_at is not None and link.expires_at <= (now or datetime.now(timezone.utc)):
        return "expired"
    return "active"


def link_for(*, user: AbstractBaseUser, slug: str) -> Link:
    """Raises Link.DoesNotExist for a slug the user may not see, as for a missing one."""
    return links_visible_to(user).get(slug=slug)


def clicks_visible_to(
    user: AbstractBaseUser,
    *,
    slug: str | None = None,
    ip: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> QuerySet[Click]:
    clicks = Click.objects.select_related("agent")
    if not sees_every_link(user):
        clicks = clicks.filter(link__owner=user)
    if slug:
        clicks = clicks.filter(link__in=links_visible_to(user).filter(slug=slug))
    if ip:
        # Stored whole or anonymised, depending on CLICK_IP_PRIVACY when imported.
        clicks = clicks.filter(ip__in={ip, anonymise(ipaddress.ip_address(ip))})
    if start:
        clicks = clicks.filter(occurred_at__gte=start)
    if end:
        clicks = clicks.filter(occurred_at__lt=end)
    return clicks

"""Reads of raw clicks: which a person sees (teams/access.py's rule, as
links.selectors applies it to links); and links with their all-time click
totals, which the importer keeps (link_click_totals): the one place other
apps read those from, to list, search, sort or count links by their
clicks. Reports are clicks/reports.py and clicks/orphans.py."""

import ipaddress
from collections.abc import Sequence
from datetime import datetime
from functools import reduce
from operator import or_
from typing import NamedTuple

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db.models import BigIntegerField, Count, F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from rest_framework.filters import search_smart_split

from links.models import Domain, Link
from links.selectors import LinkState, in_state, links_visible_to
from links.tags import with_tags
from links.validation import domain_host
from teams import access

from .enrichment import anonymise
from .models import Click


def clicks_visible_to(
    user: AbstractBaseUser,
    *,
    slug: str | None = None,
    host: str | None = None,
    ip: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> QuerySet[Click]:
    """The clicks of the links the user sees; of one of them with `slug`, on
    the domain of `host` (the default domain for None)."""
    clicks = Click.objects.select_related("agent")
    teams = access.team_ids(user)
    if teams is not None:
        clicks = clicks.filter(link__team__in=teams)
    if slug:
        try:
            host = domain_host(host)
        except ValidationError:
            return clicks.none()
        clicks = clicks.filter(link__in=links_visible_to(user).filter(domain__host=host, slug=slug))
    if ip:
        # Stored whole or anonymised, depending on CLICK_IP_PRIVACY when imported.
        clicks = clicks.filter(ip__in={ip, anonymise(ipaddress.ip_address(ip))})
    if start:
        clicks = clicks.filter(occurred_at__gte=start)
    if end:
        clicks = clicks.filter(occurred_at__lt=end)
    return clicks


def with_click_totals(links: QuerySet[Link]) -> QuerySet[Link]:
    """Annotates `clicks` and `human_clicks`, the all-time totals the importer
    keeps per link (one LEFT JOIN, so they can be sorted on)."""
    return links.annotate(
        clicks=Coalesce(F("click_totals__clicks"), 0, output_field=BigIntegerField()),
        human_clicks=Coalesce(F("click_totals__human_clicks"), 0, output_field=BigIntegerField()),
    )


SEARCH_FIELDS = ("slug", "title", "url")
# What link_search sorts by; each also descending, with a leading '-'.
ORDERING_FIELDS = ("created_at", "clicks", "human_clicks", "slug", "url", "title")


def link_search(
    *,
    user: AbstractBaseUser,
    team: int | None = None,
    query: str = "",
    domain: Domain | None = None,
    tag: str | None = None,
    is_active: bool | None = None,
    state: LinkState | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    ordering: str | Sequence[str] = ("-created_at",),
) -> QuerySet[Link]:
    """The links the user sees (of `team` only, when given), with their
    click totals (with_click_totals).

    `query` is split into words as the API's `search` parameter documents
    it: spaces and commas separate words, a quoted phrase is one word
    (rest_framework.filters.search_smart_split). Every word must appear in
    the slug, title or target URL, case aside. `tag` (case aside), `is_active`,
    `state` (in_state) and the creation range [created_after, created_before)
    filter when given.
    `ordering` takes ORDERING_FIELDS, '-' for descending, and raises
    ValueError for anything else; ties go by id, in the first key's direction."""
    keys = [ordering] if isinstance(ordering, str) else list(ordering or ("-created_at",))
    unknown = [key for key in keys if key.removeprefix("-") not in ORDERING_FIELDS]
    if unknown:
        raise ValueError(f"cannot order links by {', '.join(unknown)}")
    links = links_visible_to(user, team=team)
    for word in search_smart_split(query):
        links = links.filter(reduce(or_, (Q(**{f"{name}__icontains": word}) for name in SEARCH_FIELDS)))
    if domain is not None:
        links = links.filter(domain=domain)
    if tag:
        links = with_tags(links, [tag])
    if is_active is not None:
        links = links.filter(is_active=is_active)
    if state is not None:
        links = links.filter(in_state(LinkState(state)))
    if created_after:
        links = links.filter(created_at__gte=created_after)
    if created_before:
        links = links.filter(created_at__lt=created_before)
    return with_click_totals(links).order_by(*keys, "-id" if keys[0].startswith("-") else "id")


class LinksAndClicks(NamedTuple):
    links: int
    clicks: int
    human_clicks: int


def links_and_clicks(links: QuerySet[Link]) -> LinksAndClicks:
    """How many these links are, and their all-time clicks and human clicks
    (one query)."""
    sums = links.aggregate(
        links=Count("id"),
        clicks=Coalesce(Sum("click_totals__clicks"), 0, output_field=BigIntegerField()),
        human_clicks=Coalesce(Sum("click_totals__human_clicks"), 0, output_field=BigIntegerField()),
    )
    return LinksAndClicks(int(sums["links"]), int(sums["clicks"]), int(sums["human_clicks"]))

"""Reads of raw clicks: which a person sees (teams/access.py's rule, as
links.selectors applies it to links); and links with their all-time click
totals, which the importer keeps (link_click_totals): the one place other
apps read those from, to list, search, sort or count links by their
clicks. Reports are clicks/reports.py and clicks/orphans.py."""

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, replace
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

PAGE_ORDER = ("-occurred_at", "-click_id")  # how the raw clicks' pages are ordered, in either click store


@dataclass(frozen=True)
class ClickFilter:
    """Which raw clicks: of the links of `teams` (None: of every team's),
    of `links` too when given, from one of `ips`, in [start, end), with
    these dimensions' values (rollups.DIMENSIONS), bots or not. PostgreSQL's
    are its queryset(); the ClickHouse store's, clickhouse_export's statement."""

    teams: QuerySet | None = None  # a subquery of their ids (teams.access.team_ids)
    links: QuerySet[Link] | None = None
    link_id: int | None = None
    ips: frozenset[str] = frozenset()
    start: datetime | None = None
    end: datetime | None = None
    dimensions: tuple[tuple[str, str], ...] = ()
    include_bots: bool = True
    nothing: bool = False

    def narrowed(self, *, link_id: int, dimensions: dict[str, str], include_bots: bool) -> "ClickFilter":
        return replace(self, link_id=link_id, dimensions=tuple(dimensions.items()), include_bots=include_bots)

    def link_ids(self) -> list[int]:
        """The ids of the links whose clicks these are, from PostgreSQL."""
        if self.nothing:
            return []
        links = Link.objects.all() if self.teams is None else Link.objects.filter(team__in=self.teams)
        if self.links is not None:
            links = links.filter(pk__in=self.links.values("pk"))
        if self.link_id is not None:
            links = links.filter(pk=self.link_id)
        return list(links.values_list("pk", flat=True))

    def queryset(self) -> QuerySet[Click]:
        clicks = Click.objects.select_related("agent")
        if self.nothing:
            return clicks.none()
        if self.teams is not None:
            clicks = clicks.filter(link__team__in=self.teams)
        if self.links is not None:
            clicks = clicks.filter(link__in=self.links)
        if self.link_id is not None:
            clicks = clicks.filter(link_id=self.link_id)
        if self.ips:
            clicks = clicks.filter(ip__in=self.ips)
        if self.start:
            clicks = clicks.filter(occurred_at__gte=self.start)
        if self.end:
            clicks = clicks.filter(occurred_at__lt=self.end)
        if self.dimensions:
            clicks = clicks.filter(**dict(self.dimensions))
        return clicks if self.include_bots else clicks.filter(is_bot=False)


def clicks_filter(
    user: AbstractBaseUser,
    *,
    slug: str | None = None,
    host: str | None = None,
    ip: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> ClickFilter:
    """The clicks of the links the user sees; of one of them with `slug`, on
    the domain of `host` (the default domain for None)."""
    teams = access.team_ids(user)
    links = None
    if slug:
        try:
            host = domain_host(host)
        except ValidationError:
            return ClickFilter(nothing=True)
        links = links_visible_to(user).filter(domain__host=host, slug=slug)
    # Stored whole or anonymised, depending on CLICK_IP_PRIVACY when imported.
    ips = frozenset({ip, anonymise(ipaddress.ip_address(ip))}) if ip else frozenset()
    return ClickFilter(teams=teams, links=links, ips=ips, start=start, end=end)


def clicks_visible_to(user: AbstractBaseUser, **narrowing) -> QuerySet[Click]:
    """clicks_filter's clicks in PostgreSQL."""
    return clicks_filter(user, **narrowing).queryset()


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

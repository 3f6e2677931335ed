"""Reads of links. Who sees which links, with their clicks, is
teams/access.py's rule (docs/api.md, "Who may do what"), applied here by
`links_visible_to` and `links_editable_by`: the links of the teams a person
is a member of, of every team for a superuser, of its one team for a request
made with an API token. The staff flag shows no link by itself."""

import enum
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from slingshot.contract import visits_key
from slingshot.redis import RedisUnavailable, quick_call
from teams import access
from teams.models import Role

from .models import Link
from .validation import domain_host

log = logging.getLogger(__name__)


def short_url(slug: str) -> str:
    """Where the edge serves a slug of the default domain (Link.short_url
    gives a link's, on its domain)."""
    return settings.EDGE_BASE_URL.rstrip("/") + "/" + slug


def sees_operations(user: AbstractBaseUser) -> bool:
    """The importer's backlog and the edge's health, on the overview."""
    return user.is_active and (user.is_staff or user.is_superuser)


def links_visible_to(user: AbstractBaseUser, *, team: int | None = None, role: str = Role.VIEWER) -> QuerySet[Link]:
    """The links of the teams in which the user has at least `role` (reads
    take a viewer's); with `team` (an id), of that team only. One query, a
    subquery of the user's memberships in it; a team given costs a lookup
    of the user's role first, and then reads by the team's index alone."""
    links = Link.objects.select_related("domain")
    if team is not None:
        return links.filter(team_id=team) if access.allows(access.role_in(user, team), role) else links.none()
    teams = access.team_ids(user, role)
    return links if teams is None else links.filter(team_id__in=teams)


def links_editable_by(user: AbstractBaseUser, *, team: int | None = None) -> QuerySet[Link]:
    """The links the user may change, disable and delete: an editor's."""
    return links_visible_to(user, team=team, role=Role.EDITOR)


def with_role(links: QuerySet[Link], user: AbstractBaseUser) -> QuerySet[Link]:
    """Annotates `role`, the user's in each link's team (teams.access.role_in),
    in the same query."""
    return links.annotate(role=access.role_annotation(user))


def taken_slugs(*, slugs: Iterable[tuple[int, str]]) -> set[tuple[int, str]]:
    """Those of the (domain id, slug) pairs that a link has, whoever owns
    it; one query."""
    pairs = set(slugs)
    with connection.cursor() as cursor:
        # = ANY(array): one parameter each, however many pairs (IN would take one per value).
        cursor.execute(
            f"SELECT domain_id, slug FROM {Link._meta.db_table} "
            "WHERE (domain_id, slug) IN (SELECT * FROM unnest(%s::bigint[], %s::text[]))",
            [[domain for domain, _ in pairs], [slug for _, slug in pairs]],
        )
        return set(cursor.fetchall())


class LinkState(enum.StrEnum):
    """What the edge does with a link now (docs/dashboard.md)."""

    ACTIVE = "active"
    SCHEDULED = "scheduled"  # before valid_since: answered as unknown
    EXPIRED = "expired"  # from expires_at on: 410
    LIMIT_REACHED = "limit reached"  # max_visits redirects served: 410
    DISABLED = "disabled"  # answered as unknown; also while its destination is listed (Link.listed)


def in_state(state: LinkState, *, now: datetime | None = None) -> Q:
    """The links in a state as link_state has it, by their columns. Not
    for LIMIT_REACHED (ValueError): a link's visits are counted by the edge,
    in Redis (link_visits), and such a link is among the active ones here."""
    now = now or timezone.now()
    live = Q(is_active=True, listed="", blocked_at__isnull=True)
    started = Q(valid_since__isnull=True) | Q(valid_since__lte=now)
    if state == LinkState.ACTIVE:
        return live & started & (Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    if state == LinkState.SCHEDULED:
        return live & Q(valid_since__gt=now)
    if state == LinkState.EXPIRED:
        return live & started & Q(expires_at__lte=now)
    if state == LinkState.DISABLED:
        return Q(is_active=False) | ~Q(listed="") | Q(blocked_at__isnull=False)
    raise ValueError(f"links cannot be searched by the state {state!r}")


def link_counts(team_ids: Iterable[int]) -> dict[int, int]:
    """How many links each of these teams has, by team id; one query."""
    counted = Link.objects.filter(team_id__in=list(team_ids)).values("team_id").annotate(count=Count("id"))
    return {row["team_id"]: row["count"] for row in counted}


def link_visits(links: Iterable[Link]) -> dict[int, int] | None:
    """The redirects the edge has counted for each of these links that has
    a visit limit (the counters of docs/contract.md), in one round trip to
    Redis; None when Redis does not answer at once."""
    limited = [link.pk for link in links if link.max_visits]
    if not limited:
        return {}
    try:
        values = quick_call(lambda client: client.mget([visits_key(pk) for pk in limited]), what="visit counters")
    except RedisUnavailable as exc:
        log.warning("link states without visit counts: %s", exc)
        return None
    return {pk: int(value or 0) for pk, value in zip(limited, values, strict=True)}


@dataclass(frozen=True)
class VisitLimit:
    """A limited link's visits: the most it is made for, and how many the
    edge has served (None while Redis does not answer)."""

    limit: int
    served: int | None


def visit_limit(link: Link) -> VisitLimit | None:
    """The link's VisitLimit, None when it has no limit. Requests over the
    limit count too: the visits served are at most the limit."""
    if not link.max_visits:
        return None
    visits = link_visits([link])
    served = None if visits is None else min(visits.get(link.pk, 0), link.max_visits)
    return VisitLimit(limit=link.max_visits, served=served)


def past_limit(links: QuerySet[Link]) -> list[int] | None:
    """The ids of these links that have had every visit they were made for,
    as link_state tells it; None when Redis does not answer at once."""
    limited = list(links.filter(max_visits__isnull=False).select_related(None).only("pk", "max_visits"))
    visits = link_visits(limited)
    if visits is None:
        return None
    return [link.pk for link in limited if visits.get(link.pk, 0) >= link.max_visits]


def link_state(link: Link, *, now: datetime | None = None, visits: int | None = None) -> LinkState:
    """The one rule for a link's state, as the edge applies it: disabled,
    then scheduled, expired, limit reached (with `visits`, the link's counter
    from link_visits; unknown counts as under the limit), else active."""
    now = now or timezone.now()
    if not link.is_active or link.listed or link.blocked_at is not None:
        return LinkState.DISABLED
    if link.valid_since and now < link.valid_since:
        return LinkState.SCHEDULED
    if link.expires_at and now >= link.expires_at:
        return LinkState.EXPIRED
    if link.max_visits and visits is not None and visits >= link.max_visits:
        return LinkState.LIMIT_REACHED
    return LinkState.ACTIVE


def link_states(links: Sequence[Link], *, now: datetime | None = None) -> dict[int, LinkState]:
    """link_state of each of these links (a page of the list, say), by id:
    one Redis round trip for the visit counters, no query."""
    now = now or timezone.now()
    visits = link_visits(links) or {}
    return {link.pk: link_state(link, now=now, visits=visits.get(link.pk)) for link in links}


def link_for(*, user: AbstractBaseUser, slug: str, host: str | None = None, team: int | None = None) -> Link:
    """The link of a slug on the domain of a host as people write it (the
    default domain for None), with `role`, the user's in its team
    (with_role); one query. Raises Link.DoesNotExist for a link the user may
    not see (or not in `team`), as for a missing one, and for a host that
    cannot be a domain's."""
    try:
        host = domain_host(host)
    except ValidationError:
        raise Link.DoesNotExist(f"no domain {host!r}") from None
    links = links_visible_to(user)
    if team is not None:
        links = links.filter(team_id=team)
    return with_role(links, user).get(domain__host=host, slug=slug)

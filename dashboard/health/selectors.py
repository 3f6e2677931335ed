"""Reads of links' health. Whose links a person sees is links.selectors'
rule: these narrow or annotate a queryset of links it gave."""

from datetime import datetime, timedelta

from django.db.models import Q, QuerySet

from links.models import Link
from links.selectors import LinkState, in_state

from .models import LinkHealth, Status


def with_health(links: QuerySet[Link]) -> QuerySet[Link]:
    """The links with their LinkHealth in the same query (health_of reads it)."""
    return links.select_related("health")


def broken_only(links: QuerySet[Link], broken: bool = True) -> QuerySet[Link]:
    """The links whose last check found their destination broken; with
    `broken` false, the others (working, or not checked yet)."""
    found_broken = Q(health__status=Status.BROKEN)
    return links.filter(found_broken if broken else ~found_broken)


def health_of(link: Link) -> LinkHealth | None:
    """The link's last check, None before its first (a query unless
    with_health read it)."""
    try:
        return link.health
    except LinkHealth.DoesNotExist:
        return None


def not_checked_yet(link: Link) -> None:
    """Tells the link it has no check, without a query (a link just made)."""
    Link.health.related.set_cached_value(link, None)


def due_links(*, started: datetime, every: timedelta | None, after: int, limit: int) -> list[tuple[int, str]]:
    """(id, url) of up to `limit` active links (links.selectors.in_state)
    past id `after`, in id order, whose destination is due a check in a
    round that began at `started`: never checked, or last checked `every`
    before it (None: before it at all, so each is checked once a round)."""
    cutoff = started - every if every else started
    links = Link.objects.filter(in_state(LinkState.ACTIVE, now=started), pk__gt=after).filter(
        Q(health__isnull=True) | Q(health__checked_at__lte=cutoff)
    )
    return list(links.order_by("pk").values_list("pk", "url")[:limit])

"""`link.expired` and `link.limit_reached`, which no request makes: the
deliverer looks every few seconds (make_link_events) for links that have
expired, or whose visits the edge counted reached their limit, among the
teams with a webhook that wants the event, and makes each link's event
once (a LinkMark, inserted in the event's transaction)."""

from datetime import UTC, datetime, timedelta

from django.db import transaction

from links.models import Link
from links.selectors import link_visits

from . import event_types as types
from .events import emit, link_data
from .models import LinkMark, Webhook

# How far back an expiry still makes an event, for a deliverer that was down.
EXPIRED_WITHIN = timedelta(days=1)


def _teams_wanting(event_type: str) -> list[int]:
    return list(
        Webhook.objects.filter(enabled=True, events__contains=[event_type]).values_list("team_id", flat=True).distinct()
    )


def _unmarked(links, event_type: str):
    return links.exclude(pk__in=LinkMark.objects.filter(event_type=event_type).values("link_id")).select_related(
        "domain"
    )


def _mark_and_emit(link: Link, event_type: str) -> bool:
    with transaction.atomic():
        _, made = LinkMark.objects.get_or_create(link_id=link.pk, event_type=event_type)
        if made:
            emit(link.team_id, event_type, lambda: link_data(link))
        return made


def make_link_events(now: datetime | None = None) -> int:
    now = now or datetime.now(UTC)
    made = 0
    teams = _teams_wanting(types.LINK_EXPIRED)
    if teams:
        expired = Link.objects.filter(team_id__in=teams, expires_at__lte=now, expires_at__gt=now - EXPIRED_WITHIN)
        for link in _unmarked(expired, types.LINK_EXPIRED)[:1000]:
            made += _mark_and_emit(link, types.LINK_EXPIRED)
    teams = _teams_wanting(types.LINK_LIMIT_REACHED)
    if teams:
        limited = list(
            _unmarked(Link.objects.filter(team_id__in=teams, max_visits__isnull=False), types.LINK_LIMIT_REACHED)[:5000]
        )
        visits = link_visits(limited) or {}
        for link in limited:
            if visits.get(link.pk, 0) >= link.max_visits:
                made += _mark_and_emit(link, types.LINK_LIMIT_REACHED)
    return made

"""Reads of the moderation queue: the reports, and what the staff see of a
reported link (its owner, team, creation and clicks)."""

from django.db.models import QuerySet

from clicks.selectors import with_click_totals
from links.models import Link

from .models import Report


def reports(*, status: str | None = None) -> QuerySet[Report]:
    found = Report.objects.select_related("link__domain", "link__team", "link__owner", "handled_by")
    return found.filter(status=status) if status else found


def link_facts(link: Link) -> dict:
    """The reported link as the staff weigh it."""
    totals = with_click_totals(Link.objects.filter(pk=link.pk)).values("clicks", "human_clicks").first() or {}
    owner = link.owner
    return {
        "id": link.pk,
        "short_url": link.short_url,
        "url": link.url,
        "created_at": link.created_at,
        "active": link.is_active,
        "listed": link.listed,
        "blocked": link.blocked_at is not None,
        "blocked_for": link.blocked_for,
        "team": {"id": link.team_id, "name": link.team.name, "suspended": link.team.suspended_at is not None},
        "owner": None
        if owner is None
        else {"id": owner.pk, "username": owner.get_username(), "active": owner.is_active},
        "clicks": totals.get("clicks", 0),
        "human_clicks": totals.get("human_clicks", 0),
    }

"""The team a person works in on the dashboard: chosen in the navigation
(switch_team), kept in their session, their personal team until they choose.
What they may do there is teams/access.py's to say."""

from django.http import HttpRequest

from teams.models import Membership
from teams.selectors import memberships_of

SESSION_KEY = "team"


def memberships(request: HttpRequest) -> list[Membership]:
    """The signed-in person's memberships, read once per request."""
    if not hasattr(request, "_slingshot_memberships"):
        request._slingshot_memberships = memberships_of(request.user) if request.user.is_authenticated else []
    return request._slingshot_memberships


def current_membership(request: HttpRequest) -> Membership | None:
    """The membership of the team chosen in this session, else the first
    (the personal team); None for someone in no team at all."""
    mine = memberships(request)
    chosen = request.session.get(SESSION_KEY)
    for membership in mine:
        if membership.team_id == chosen:
            return membership
    return mine[0] if mine else None


def choose(request: HttpRequest, team_id: int) -> bool:
    """Makes the team current, if the person is a member of it."""
    if any(membership.team_id == team_id for membership in memberships(request)):
        request.session[SESSION_KEY] = team_id
        return True
    return False


def navigation(request: HttpRequest) -> dict:
    """The context processor of the navigation's team switcher."""
    if not request.user.is_authenticated:
        return {}
    return {"team_memberships": memberships(request), "current_membership": current_membership(request)}

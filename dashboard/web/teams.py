"""The team a person works in on the dashboard: chosen in the navigation
(web.team_views.team_switch), kept in their session, their personal team
until they choose. A superuser may choose any team, and works in it as its
admin. What they may do there is teams/access.py's to say."""

from django.http import HttpRequest

from teams import access
from teams.models import Membership, Role, Team
from teams.selectors import memberships_of
from teams.services import personal_team

SESSION_KEY = "team"


def memberships(request: HttpRequest) -> list[Membership]:
    """The signed-in person's memberships, read once per request."""
    if not hasattr(request, "_slingshot_memberships"):
        request._slingshot_memberships = memberships_of(request.user) if request.user.is_authenticated else []
    return request._slingshot_memberships


def current_membership(request: HttpRequest) -> Membership | None:
    """The membership of the team chosen in this session, else the first
    (the personal team); None for someone in no team at all."""
    if hasattr(request, "_slingshot_current"):
        return request._slingshot_current
    mine = memberships(request)
    chosen = request.session.get(SESSION_KEY)
    current = next((membership for membership in mine if membership.team_id == chosen), None)
    if current is None and chosen is not None and access.acts_everywhere(request.user):
        team = Team.objects.filter(pk=chosen).first()
        current = Membership(team=team, user=request.user, role=Role.ADMIN) if team else None
    request._slingshot_current = current or (mine[0] if mine else None)
    return request._slingshot_current


def choose(request: HttpRequest, team_id: int) -> bool:
    """Makes the team current, if the person is a member of it (any team, for a superuser)."""
    mine = any(membership.team_id == team_id for membership in memberships(request))
    if mine or (access.acts_everywhere(request.user) and Team.objects.filter(pk=team_id).exists()):
        request.session[SESSION_KEY] = team_id
        request.__dict__.pop("_slingshot_current", None)
        return True
    return False


def navigation(request: HttpRequest) -> dict:
    """The context processor of the navigation's team switcher. An error page
    for a request refused before the authentication middleware ran (a bad
    Host header) has no user: no switcher."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"team_memberships": memberships(request), "current_membership": current_membership(request)}


def current_team(request) -> Team:
    """The team chosen in the navigation, else the personal team."""
    membership = current_membership(request)
    return membership.team if membership else personal_team(request.user)


def edits_in(request, team: Team) -> bool:
    """Whether the person may create and change links in the team."""
    membership = current_membership(request)
    if membership and membership.team_id == team.pk and not access.acts_everywhere(request.user):
        return access.allows(membership.role, Role.EDITOR)
    return access.allows(access.role_in(request.user, team.pk), Role.EDITOR)

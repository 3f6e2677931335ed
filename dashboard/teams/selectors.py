"""Reads of teams, their members and their audit log. Who may read what is
teams/access.py's to say; these take what it allows."""

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Case, Count, IntegerField, QuerySet, Value, When

from . import access
from .models import AuditEntry, Membership, Role, Team


def memberships_of(user: AbstractBaseUser) -> list[Membership]:
    """The user's memberships with their teams, the personal team first,
    then by team name (a suspended team's left out); one query."""
    return list(
        Membership.objects.filter(user=user, team__suspended_at__isnull=True)
        .select_related("team")
        .annotate(
            personal=Case(When(team__personal_for=user, then=Value(0)), default=Value(1), output_field=IntegerField())
        )
        .order_by("personal", "team__name", "team_id")
    )


def teams_for(user: AbstractBaseUser, needed: str = Role.VIEWER) -> QuerySet[Team]:
    """The teams the user has at least `needed` in, each with `role` (theirs)
    and `members` (how many), by name."""
    return (
        access.teams_of(user, needed)
        .annotate(role=access.role_annotation(user, "pk"), members=Count("memberships"))
        .order_by("name", "pk")
    )


def teams_belonging_to(user: AbstractBaseUser) -> QuerySet[Team]:
    """The teams the user is a member of (a request made with a token: the
    token's team), each with `role` (theirs) and `members`, by name."""
    token = access.token_of(user)
    if token is not None:
        teams = Team.objects.filter(pk=token.team_id)
    else:
        teams = Team.objects.filter(
            pk__in=Membership.objects.filter(user=user).values("team_id"), suspended_at__isnull=True
        )
    if not user.is_active:
        teams = teams.none()
    return teams.annotate(role=access.role_annotation(user, "pk"), members=Count("memberships")).order_by("name", "pk")


def team_for(user: AbstractBaseUser, team_id: int, needed: str = Role.VIEWER) -> Team:
    """The team with `role` (the user's); Team.DoesNotExist for a team the
    user may not read, as for a missing one."""
    return access.teams_of(user, needed).annotate(role=access.role_annotation(user, "pk")).get(pk=team_id)


def team_members(team: Team) -> QuerySet[Membership]:
    return team.memberships.select_related("user").order_by("user__username")


def member_of(team: Team, username: str) -> Membership:
    """Raises Membership.DoesNotExist."""
    return team.memberships.select_related("user").get(user__username=username)


def audit_entries(*, team_ids: QuerySet | list[int] | None, action: str | None = None, slug: str | None = None):
    """Audit entries of these teams (None: every team), newest first."""
    entries = AuditEntry.objects.all()
    if team_ids is not None:
        entries = entries.filter(team_id__in=team_ids)
    if action:
        entries = entries.filter(action=action)
    if slug:
        entries = entries.filter(slug=slug)
    return entries.order_by("-id")

"""Roles from the groups people have at the company's OpenID provider
(accounts/sso.py reads them from the OIDC_GROUPS_CLAIM claim).

Where they map: a team's GroupRole rows, which its admins set on its People
page, and OIDC_GROUP_ROLES, for deployments kept as code (its teams are made
when a sign-in first needs them). A group that maps to several roles in one
team gives the highest.

At every sign-in through the provider (`follow_groups`) a person's
memberships follow their groups: a team their groups give them is joined
with that role, a role their groups changed is changed, and a membership
their groups gave and no longer give is ended, with their tokens for the
team. Memberships given by hand (via_groups false) are kept as they are,
and shown apart on the People page. Each change is in the team's audit
log, by no one (the system).
"""

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from . import access, audit
from .models import Action, GroupRole, Membership, Role, Team
from .services import revoke_member_tokens

RANK = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2}


def _team_named(name: str) -> Team:
    """OIDC_GROUP_ROLES's team: the oldest shared team of that name, made if none."""
    team = Team.objects.filter(name=name, personal_for__isnull=True).order_by("pk").first()
    if team is None:
        team = Team.objects.create(name=name)
        audit.record(team_id=team.pk, actor=None, action=Action.TEAM_CREATED, subject=name)
    return team


def wanted_roles(groups: list[str] | tuple[str, ...]) -> dict[int, str]:
    """The role in each team that these groups give: team id -> role."""
    groups = set(groups)
    wanted: dict[int, str] = {}

    def give(team_id: int, role: str) -> None:
        if team_id not in wanted or RANK[role] > RANK[wanted[team_id]]:
            wanted[team_id] = role

    if not groups:
        return wanted
    for team_id, role in GroupRole.objects.filter(group__in=groups).values_list("team_id", "role"):
        give(team_id, role)
    for group, team_name, role in settings.OIDC_GROUP_ROLES:
        if group in groups:
            give(_team_named(team_name).pk, role)
    return wanted


@transaction.atomic
def follow_groups(*, user: AbstractBaseUser, groups: list[str] | tuple[str, ...]) -> None:
    """Makes the person's memberships follow their groups (the module's docstring)."""
    wanted = wanted_roles(groups)
    held = {
        membership.team_id: membership
        for membership in Membership.objects.select_for_update(of=("self",)).select_related("team").filter(user=user)
    }
    name = user.get_username()
    for team_id, role in wanted.items():
        membership = held.get(team_id)
        if membership is None:
            Membership.objects.create(team_id=team_id, user=user, role=role, via_groups=True)
            audit.record(
                team_id=team_id, actor=None, action=Action.MEMBER_ADDED, subject=name, changes={"role": [None, role]}
            )
        elif membership.via_groups and membership.role != role:
            before, membership.role = membership.role, role
            membership.save(update_fields=["role"])
            audit.record(
                team_id=team_id,
                actor=None,
                action=Action.MEMBER_CHANGED,
                subject=name,
                changes={"role": [before, role]},
            )
    for team_id, membership in held.items():
        if membership.via_groups and team_id not in wanted:
            membership.delete()
            audit.record(
                team_id=team_id,
                actor=None,
                action=Action.MEMBER_REMOVED,
                subject=name,
                changes={"role": [membership.role, None]},
            )
            membership.user = user
            revoke_member_tokens(membership, actor=None)


def group_role_set(*, actor: AbstractBaseUser, team: Team, group: str, role: str) -> GroupRole:
    """Maps `group` to `role` in `team` (a team admin's to do); its members
    get it at their next sign-in."""
    access.require(actor, team.pk, Role.ADMIN, to="map groups to roles")
    group = group.strip()
    if not group or len(group) > 200:
        raise ValidationError({"group": ValidationError("Name a group, in 1 to 200 characters.", code="invalid")})
    if role not in Role.values:
        raise ValidationError({"role": ValidationError(f"Use one of {', '.join(Role.values)}.", code="invalid")})
    mapping, _ = GroupRole.objects.update_or_create(team=team, group=group, defaults={"role": role})
    return mapping


def group_role_delete(*, actor: AbstractBaseUser, mapping: GroupRole) -> None:
    access.require(actor, mapping.team_id, Role.ADMIN, to="map groups to roles")
    mapping.delete()

"""Writes to teams and memberships, each with its audit entry and each
checked against teams/access.py. A team always keeps an admin, and a
personal team keeps its person as one."""

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from slingshot.text import invisible

from . import access, audit
from .models import RETENTION_DAYS_MIN_CLICKHOUSE, Action, Membership, Role, Team

log = logging.getLogger(__name__)


def personal_team_create(*, user: AbstractBaseUser) -> Team:
    team = Team.objects.create(name=user.get_username(), personal_for=user)
    Membership.objects.create(team=team, user=user, role=Role.ADMIN)
    return team


def personal_team(user: AbstractBaseUser) -> Team:
    """The user's personal team, made now for a user made without one (by
    bulk_create, which sends no signal)."""
    try:
        return Team.objects.get(personal_for=user)
    except Team.DoesNotExist:
        pass
    try:
        with transaction.atomic():
            return personal_team_create(user=user)
    except IntegrityError:  # made meanwhile by another request
        return Team.objects.get(personal_for=user)


def default_team(user: AbstractBaseUser) -> Team:
    """Where what a person makes without naming a team goes: the team of the
    API token the request came with, else their personal team."""
    token = access.token_of(user)
    return token.team if token is not None else personal_team(user)


def _team_name(name: str) -> str:
    """A team's name as kept: without surrounding spaces. One of nothing
    that can be seen (a Hangul filler, zero-width spaces) is as blank as
    one of spaces, and refused."""
    name = name.strip()
    if name and all(char.isspace() or invisible(char) for char in name):
        raise ValidationError(
            {"name": ValidationError("The name shows nothing: it needs a character that can be seen.", code="blank")}
        )
    return name


@transaction.atomic
def team_create(*, actor: AbstractBaseUser, name: str) -> Team:
    """A new team, with `actor` its admin."""
    team = Team(name=_team_name(name))
    team.full_clean(exclude=["personal_for"])
    team.save()
    Membership.objects.create(team=team, user=actor, role=Role.ADMIN)
    audit.record(team_id=team.pk, actor=actor, action=Action.TEAM_CREATED, subject=team.name)
    return team


@transaction.atomic
def team_rename(*, actor: AbstractBaseUser, team: Team, name: str) -> Team:
    """Renames the team, with the rule of names team_create has; a personal
    team too (it stays its person's)."""
    access.require(actor, team.pk, Role.ADMIN, to="rename the team")
    team = Team.objects.select_for_update().get(pk=team.pk)
    before = team.name
    team.name = _team_name(name)
    team.full_clean(exclude=["personal_for"])
    if team.name != before:
        team.save(update_fields=["name"])
        audit.record(
            team_id=team.pk,
            actor=actor,
            action=Action.TEAM_RENAMED,
            subject=team.name,
            changes={"name": [before, team.name]},
        )
    return team


@transaction.atomic
def team_require_second_factor(*, actor: AbstractBaseUser, team: Team, required: bool) -> Team:
    """Whether the team's members must sign in with single sign-on or a
    second factor before they see anything (web.middleware.SecondFactorRequiredMiddleware)."""
    access.require(actor, team.pk, Role.ADMIN, to="change what the team requires of its members")
    team = Team.objects.select_for_update().get(pk=team.pk)
    if team.require_second_factor != required:
        team.require_second_factor = required
        team.save(update_fields=["require_second_factor"])
        audit.record(
            team_id=team.pk,
            actor=actor,
            action=Action.TEAM_SECOND_FACTOR,
            subject=team.name,
            changes={"require_second_factor": [not required, required]},
        )
    return team


# Each setting of what a team keeps of its visits, with its audit action.
VISIT_SETTINGS = {"visit_retention_days": Action.TEAM_RETENTION, "ip_storage": Action.TEAM_IP_STORAGE}


@transaction.atomic
def team_visit_settings(*, actor: AbstractBaseUser, team: Team, **changes) -> Team:
    """Sets how long the team keeps its raw clicks (`visit_retention_days`,
    None: for ever; clicks.retention purges them) and what the importer
    keeps of its visitors' addresses (`ip_storage`, '' for the service's
    CLICK_IP_PRIVACY), either or both; an admin's to do. Each change is in
    the audit log; a value out of bounds raises ValidationError, changing nothing."""
    unknown = set(changes) - set(VISIT_SETTINGS)
    if unknown:
        raise TypeError(f"team_visit_settings: no setting {', '.join(sorted(unknown))}")
    access.require(actor, team.pk, Role.ADMIN, to="change how the team keeps its visits")
    team = Team.objects.select_for_update().get(pk=team.pk)
    days = changes.get("visit_retention_days")
    shortest = RETENTION_DAYS_MIN_CLICKHOUSE
    if (
        days is not None
        and days < shortest
        and days != team.visit_retention_days
        and settings.CLICK_STORE == "clickhouse"
    ):
        raise ValidationError(
            {
                "visit_retention_days": ValidationError(
                    f"Keep visits at least {shortest} days while clicks are stored in ClickHouse "
                    f"(CLICK_STORE=clickhouse): the accounting compares the last {shortest} days' clicks. "
                    "Nothing was changed.",
                    code="too_short_for_this_store",
                )
            }
        )
    before = {name: getattr(team, name) for name in changes}
    for name, value in changes.items():
        setattr(team, name, value)
    team.full_clean(exclude=[field.name for field in Team._meta.fields if field.name not in changes])
    changed = [name for name in changes if getattr(team, name) != before[name]]
    if changed:
        team.save(update_fields=changed)
    for name in changed:
        audit.record(
            team_id=team.pk,
            actor=actor,
            action=VISIT_SETTINGS[name],
            subject=team.name,
            changes={name: [before[name], getattr(team, name)]},
        )
    return team


def _links_first(count: int) -> ValidationError:
    return ValidationError(
        {
            "team": ValidationError(
                f"The team still has {count} link{'' if count == 1 else 's'}: move them to another team or "
                "delete them first.",
                code="has_links",
            )
        }
    )


@transaction.atomic
def team_delete(*, actor: AbstractBaseUser, team: Team) -> None:
    """Deletes a team that has no links, with its memberships, its API
    tokens (refused from the next request) and its CSV imports. Its audit
    log goes with it, so the deletion is logged here. A personal team is
    not deleted."""
    access.require(actor, team.pk, Role.ADMIN, to="delete the team")
    # A link made or moved into the team meanwhile checks its team row
    # (FOR KEY SHARE), which this lock holds off until the team is gone.
    team = Team.objects.select_for_update().get(pk=team.pk)
    if team.personal_for_id is not None:
        raise ValidationError(
            {"team": ValidationError("A personal team is not deleted: it is its person's.", code="personal_team")}
        )
    links = team.links.all()  # links.Link, by its team's related name: links sit above teams
    if count := links.count():
        raise _links_first(count)
    team_id = team.pk
    try:
        with transaction.atomic():
            _, gone = team.delete()
            connection.check_constraints()  # the deferred foreign keys, here rather than at commit
    except (ProtectedError, IntegrityError):
        raise _links_first(links.count() or 1) from None
    log.info(
        "team %s (%r) deleted by %s, with %d memberships, %d API tokens, %d audit entries, %d CSV imports",
        team_id,
        team.name,
        actor.get_username(),
        gone.get("teams.Membership", 0),
        gone.get("tokens.ApiToken", 0),
        gone.get("teams.AuditEntry", 0),
        gone.get("links.LinkImport", 0),
    )


def _keeps_an_admin(membership: Membership, new_role: str | None) -> None:
    """Refuses a change that would leave the team without an admin, or a
    personal team without its person. Locks the team's admins, so two
    admins removing each other at once cannot both succeed."""
    if membership.team.personal_for_id == membership.user_id and new_role != Role.ADMIN:
        raise ValidationError(
            {"role": ValidationError("A personal team keeps its person as an admin.", code="personal_team")}
        )
    if membership.role != Role.ADMIN or new_role == Role.ADMIN:
        return
    admins = list(
        Membership.objects.select_for_update().filter(team_id=membership.team_id, role=Role.ADMIN).values_list("pk")
    )
    if len(admins) <= 1:
        raise ValidationError(
            {
                "role": ValidationError(
                    "A team keeps at least one admin: make someone else admin first.", code="last_admin"
                )
            }
        )


@transaction.atomic
def member_add(*, actor: AbstractBaseUser, team: Team, username: str, role: str) -> Membership:
    access.require(actor, team.pk, Role.ADMIN, to="manage members")
    try:
        user = get_user_model().objects.get(username=username, is_active=True)
    except get_user_model().DoesNotExist:
        raise ValidationError({"username": ValidationError("No active user has this name.", code="unknown")}) from None
    membership = Membership(team=team, user=user, role=role)
    membership.full_clean(exclude=["team", "user"], validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            membership.save()
    except IntegrityError:
        raise ValidationError(
            {"username": ValidationError("Already a member: change their role instead.", code="member")}
        ) from None
    audit.record(
        team_id=team.pk, actor=actor, action=Action.MEMBER_ADDED, subject=username, changes={"role": [None, role]}
    )
    return membership


@transaction.atomic
def member_change(*, actor: AbstractBaseUser, membership: Membership, role: str) -> Membership:
    access.require(actor, membership.team_id, Role.ADMIN, to="manage members")
    membership = Membership.objects.select_for_update().select_related("team", "user").get(pk=membership.pk)
    if role not in Role.values:
        raise ValidationError({"role": ValidationError(f"Use one of {', '.join(Role.values)}.", code="invalid")})
    if role == membership.role:
        return membership
    _keeps_an_admin(membership, role)
    before = membership.role
    membership.role = role
    membership.via_groups = False  # given by hand from now on: the person's groups leave it be
    membership.save(update_fields=["role", "via_groups"])
    audit.record(
        team_id=membership.team_id,
        actor=actor,
        action=Action.MEMBER_CHANGED,
        subject=membership.user.get_username(),
        changes={"role": [before, role]},
    )
    return membership


@transaction.atomic
def member_remove(*, actor: AbstractBaseUser, membership: Membership) -> None:
    """Removes a member (an admin's to do, or the member's own: leaving) and
    revokes their tokens for the team; each revocation is in the audit log."""
    if actor.pk != membership.user_id or access.token_of(actor) is not None:
        access.require(actor, membership.team_id, Role.ADMIN, to="manage members")
    membership = Membership.objects.select_for_update().select_related("team", "user").get(pk=membership.pk)
    _keeps_an_admin(membership, None)
    membership.delete()
    audit.record(
        team_id=membership.team_id,
        actor=actor,
        action=Action.MEMBER_REMOVED,
        subject=membership.user.get_username(),
        changes={"role": [membership.role, None]},
    )
    revoke_member_tokens(membership, actor=actor)


def revoke_member_tokens(membership: Membership, *, actor: AbstractBaseUser | None) -> None:
    """Revokes the tokens a member who is no longer one held for the team,
    each revocation in the audit log."""
    username = membership.user.get_username()
    now = timezone.now()
    # tokens.ApiToken, by the team's related name: tokens sit above teams.
    for token in membership.team.api_tokens.filter(user_id=membership.user_id, revoked_at=None):
        membership.team.api_tokens.filter(pk=token.pk).update(revoked_at=now)
        audit.record(
            team_id=membership.team_id,
            actor=actor,
            action=Action.TOKEN_REVOKED,
            subject=f"{token} of {username}",
        )

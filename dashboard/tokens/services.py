"""API tokens: creation (the secret is returned once), revocation, lookup.
A token belongs to one person and one team, and acts there with no more
than that person's role (teams/access.py)."""

import functools
import hashlib
import secrets
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from teams import access, audit
from teams.models import Action, Membership, Role, Team
from teams.services import default_team

from .models import ApiToken

TOKEN_PREFIX = "ssk_"
# Writing last_used_at on every request would turn reads into writes.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_digest(raw: str) -> str:
    # Tokens carry 256 random bits, so a fast hash is as safe as a slow one.
    return hashlib.sha256(raw.encode()).hexdigest()


@transaction.atomic
def token_create(
    *,
    user: AbstractBaseUser,
    name: str,
    scope: str = ApiToken.Scope.READ,
    expires_at: datetime | None = None,
    team: Team | None = None,
) -> tuple[ApiToken, str]:
    """A token of `user` for `team` (by default their personal team), of
    which they must be a member; a write token takes an editor's role."""
    team = team or default_team(user)
    role = access.require(user, team.pk, Role.VIEWER, to="make a token for it")
    if scope == ApiToken.Scope.WRITE and not access.allows(role, Role.EDITOR):
        raise ValidationError(
            {"scope": ValidationError("A viewer's token can only read: make it read-only.", code="viewer")}
        )
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": ValidationError("An expiry must be in the future.", code="past")})
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        user=user,
        team=team,
        name=name,
        scope=scope,
        expires_at=expires_at,
        prefix=raw[: len(TOKEN_PREFIX) + 6],
        digest=token_digest(raw),
    )
    token.full_clean(exclude=["user", "team"])
    token.save()
    audit.record(team_id=team.pk, actor=user, action=Action.TOKEN_CREATED, subject=str(token))
    return token, raw


def tokens_managed_by(user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """A person's own tokens, and every token of the teams they administer."""
    if access.token_of(user) is not None:  # tokens are managed from a signed-in session
        return ApiToken.objects.none()
    teams = access.team_ids(user, Role.ADMIN)
    if teams is None:
        return ApiToken.objects.all()
    return ApiToken.objects.filter(user=user) | ApiToken.objects.filter(team__in=teams)


@transaction.atomic
def token_revoke(*, token: ApiToken, actor: AbstractBaseUser | None = None) -> ApiToken:
    """Revokes the token; `actor` must be its person or an admin of its team
    (None: the system)."""
    if actor is not None and access.token_of(actor) is not None:
        raise PermissionDenied("Tokens are managed from a signed-in session.")
    if actor is not None and actor.pk != token.user_id:
        access.require(actor, token.team_id, Role.ADMIN, to="revoke other people's tokens")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit.record(team_id=token.team_id, actor=actor, action=Action.TOKEN_REVOKED, subject=str(token))
    return token


@functools.cache
def _lookup_sql() -> str:
    """The token of a digest with its user, its team and its user's role in
    that team, in one statement. Every API request asks it: written once
    rather than compiled by the ORM each time, which cost more CPU than the
    query itself (docs/benchmarks.md, link creation)."""
    User = get_user_model()  # noqa: N806

    def columns(model, alias: str) -> str:
        return ", ".join(f'{alias}."{field.column}"' for field in model._meta.concrete_fields)

    return (
        f"SELECT {columns(ApiToken, 'k')}, {columns(User, 'u')}, {columns(Team, 't')}, "
        f"(SELECT m.role FROM {Membership._meta.db_table} m WHERE m.user_id = k.user_id AND m.team_id = k.team_id"
        f" LIMIT 1) FROM {ApiToken._meta.db_table} k"
        f" JOIN {User._meta.db_table} u ON u.{User._meta.pk.column} = k.user_id"
        f" JOIN {Team._meta.db_table} t ON t.{Team._meta.pk.column} = k.team_id"
        " WHERE k.digest = %s"
    )


def _token_with_digest(digest: str) -> ApiToken | None:
    """The token of this digest, its user and team loaded as
    select_related would, and `member_role` as annotate would; or None.
    The values go in as the driver gives them, without the ORM's
    converters, which none of these models' fields has (a JSONField would)."""
    with connection.cursor() as cursor:
        cursor.execute(_lookup_sql(), [digest])
        row = cursor.fetchone()
    if row is None:
        return None
    instances, start = [], 0
    for model in (ApiToken, get_user_model(), Team):
        names = [field.attname for field in model._meta.concrete_fields]
        instances.append(model.from_db(connection.alias, names, row[start : start + len(names)]))
        start += len(names)
    token, token.user, token.team = instances
    token.member_role = row[start]
    return token


def token_authenticate(raw: str) -> ApiToken | None:
    """The usable token for this secret, or None; with `role`, the role it
    acts with in its team now (teams.access.token_role), looked up in the
    same query, and bound to its user for this request (teams.access.bind_token).
    None as well for a person no longer active or no longer a member. Marks
    the token used."""
    return token_by_digest(token_digest(raw))


def token_by_digest(digest: str) -> ApiToken | None:
    """token_authenticate for the token of this digest, which a caller found
    some other way than by its secret (tokens/signatures.py)."""
    token = _token_with_digest(digest)
    if token is None:
        return None
    now = timezone.now()
    if not token.is_usable(now) or not token.user.is_active or token.team.suspended_at is not None:
        return None
    token.role = access.token_role(
        scope=token.scope, member_role=token.member_role, is_superuser=token.user.is_superuser
    )
    if token.role is None:
        return None
    access.bind_token(token.user, token)
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token

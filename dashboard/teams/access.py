"""Who may do what, in one place (docs/api.md, "Who may do what").

A person acts in a team through the role of their membership: a `viewer`
reads the team's links, their clicks, reports, QR codes and exports; an
`editor` also creates, changes, disables and deletes them; an `admin` also
manages the team's members and tokens. A person who is not a member finds
nothing of the team. A superuser acts as an admin of every team. The staff
flag grants no role: it opens the Django admin, where model permissions
apply only within what the roles allow.

A request made with an API token reaches the token's team only, with the
role its user has there now, and no more than `viewer` for a read-only
token. tokens.services.token_authenticate looks that role up with the token on
every request and binds it to the request's user (bind_token); nothing keeps
it longer, so a removed membership or a deactivated user stops the token at
once.

links.selectors (links_visible_to, links_editable_by), clicks.selectors (clicks_visible_to),
the services that change links, teams and tokens, the pages, the API and the
admin all ask here."""

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import Case, CharField, Expression, OuterRef, QuerySet, Subquery, Value, When

from .models import Membership, Role, Team

RANK = {Role.VIEWER: 1, Role.EDITOR: 2, Role.ADMIN: 3}
_TOKEN_ATTRIBUTE = "_slingshot_api_token"


def allows(role: str | None, needed: str) -> bool:
    """Whether `role` may do what `needed` may (None: not a member)."""
    return role is not None and RANK[Role(role)] >= RANK[Role(needed)]


def roles_at_least(needed: str) -> list[str]:
    return [role for role in Role.values if allows(role, needed)]


def token_role(*, scope: str, member_role: str | None, is_superuser: bool) -> Role | None:
    """The role a token acts with in its team: its user's (an admin's for a
    superuser, none for someone no longer a member), `viewer` at most for a
    read-only token."""
    role = Role.ADMIN if is_superuser else member_role
    if role is None:
        return None
    return Role(role) if scope == "write" else Role.VIEWER


def bind_token(user: AbstractBaseUser, token) -> None:
    """From now on `user` (this request's) acts as the token allows: its team,
    its role (`token.role`, set by tokens.services.token_authenticate)."""
    setattr(user, _TOKEN_ATTRIBUTE, token)


def token_of(user: AbstractBaseUser):
    return getattr(user, _TOKEN_ATTRIBUTE, None)


def acts_everywhere(user: AbstractBaseUser) -> bool:
    """A superuser in a signed-in session: an admin of every team."""
    return user.is_active and user.is_superuser and token_of(user) is None


def role_in(user: AbstractBaseUser, team_id: int) -> Role | None:
    """The user's role in the team, or None if they may not even read it."""
    if not user.is_active:
        return None
    token = token_of(user)
    if token is not None:
        return token.role if team_id == token.team_id else None
    if user.is_superuser:
        return Role.ADMIN
    # A suspended team (moderation/) is reached by the staff alone.
    member = Membership.objects.filter(user=user, team_id=team_id, team__suspended_at__isnull=True)
    role = member.values_list("role", flat=True).first()
    return None if role is None else Role(role)


def require(user: AbstractBaseUser, team_id: int, needed: str, *, to: str) -> Role:
    """The user's role in the team; PermissionDenied (403) if it is below
    `needed`. `to` says what for: "change links"."""
    role = role_in(user, team_id)
    if not allows(role, needed):
        mine = f"yours is {role}" if role else "you are not a member"
        raise PermissionDenied(f"To {to} takes the {needed} role in this team; {mine}.")
    return role


def team_ids(user: AbstractBaseUser, needed: str = Role.VIEWER) -> QuerySet | None:
    """The ids of the teams in which the user has at least `needed`, as a
    subquery; None for every team (a superuser's session)."""
    nothing = Team.objects.none().values("pk")
    if not user.is_active:
        return nothing
    token = token_of(user)
    if token is not None:
        return Team.objects.filter(pk=token.team_id).values("pk") if allows(token.role, needed) else nothing
    if user.is_superuser:
        return None
    memberships = Membership.objects.filter(user=user, role__in=roles_at_least(needed), team__suspended_at__isnull=True)
    return memberships.values("team_id")


def teams_of(user: AbstractBaseUser, needed: str = Role.VIEWER) -> QuerySet[Team]:
    ids = team_ids(user, needed)
    return Team.objects.all() if ids is None else Team.objects.filter(pk__in=ids)


def role_annotation(user: AbstractBaseUser, team_field: str = "team_id") -> Expression:
    """The user's role in each row's team (`team_field`), for annotate():
    the same answer as role_in, in the query that reads the rows."""
    if not user.is_active:
        return Value(None, output_field=CharField())
    token = token_of(user)
    if token is not None:
        return Case(
            When(**{team_field: token.team_id}, then=Value(token.role)),
            default=Value(None),
            output_field=CharField(),
        )
    if user.is_superuser:
        return Value(Role.ADMIN.value, output_field=CharField())
    return Subquery(Membership.objects.filter(user=user, team_id=OuterRef(team_field)).values("role")[:1])


def manages_users(user: AbstractBaseUser) -> bool:
    """Creating, deactivating people and resetting their passwords: superusers, signed in."""
    return acts_everywhere(user)


# Token scopes that may manage a team's webhooks (tokens/models.py), with an admin behind them.
_WEBHOOK_SCOPES = ("write", "webhooks")


def manages_webhooks(user: AbstractBaseUser, team_id: int) -> bool:
    """A team's webhooks are its admins' (docs/webhooks.md): in a signed-in
    session, an admin of the team (a superuser of any); with an API token
    of the team, a `write` or `webhooks` one whose person is an admin
    there now. A read-only token, and anyone below admin, sees nothing of
    them."""
    if not user.is_active:
        return False
    token = token_of(user)
    if token is None:
        return allows(role_in(user, team_id), Role.ADMIN)
    if token.team_id != team_id or token.scope not in _WEBHOOK_SCOPES:
        return False
    if user.is_superuser:
        return True
    return Membership.objects.filter(user=user, team_id=team_id, role=Role.ADMIN).exists()


def webhook_team_ids(user: AbstractBaseUser) -> QuerySet | None:
    """The ids of the teams whose webhooks the user manages, as a subquery;
    None for every team (a superuser's session)."""
    nothing = Team.objects.none().values("pk")
    if not user.is_active:
        return nothing
    token = token_of(user)
    if token is not None:
        return Team.objects.filter(pk=token.team_id).values("pk") if manages_webhooks(user, token.team_id) else nothing
    if user.is_superuser:
        return None
    return Membership.objects.filter(user=user, role=Role.ADMIN).values("team_id")

"""Sign-in through the company's OpenID Connect provider (OIDC_ISSUER).

The protocol is Authlib's, not ours: discovery from the issuer, the
authorization code flow with PKCE (S256), `state` and `nonce` kept in the
session, the code exchanged once, the ID token's signature (the provider's
JWKS), issuer, audience, expiry and nonce checked, then the provider's
userinfo. What this module decides is Slingshot's:

- who the person is: the provider's `iss` and `sub` (accounts.models.
  SsoIdentity), never an e-mail alone; a person signing in for the first
  time is made then (`person_for`), unless a local account has the same
  verified e-mail, which is linked only once its owner confirms with its
  password (web/sso_views.py);
- whether the provider can be reached, which the sign-in page says
  (`reachable`, asked at most every REACHABLE_KEPT seconds): the dashboard
  starts, and local sign-in works, while it is down.
"""

import logging
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from urllib.parse import urlsplit

import requests
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.django_client import OAuth
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from joserfc.errors import JoseError

from .models import SsoIdentity
from .services import end_sessions

log = logging.getLogger(__name__)

# Seconds the sign-in page trusts what it last learnt of the provider's reachability.
REACHABLE_KEPT = 30.0


class SignInRefused(Exception):
    """The provider said no, or what it sent did not hold: the message is
    for the person; `error` is the provider's OAuth error code, if it sent one."""

    def __init__(self, message: str, *, error: str = ""):
        super().__init__(message)
        self.error = error


UNREACHABLE = "unreachable"  # SignInRefused.error when the provider did not answer


@dataclass(frozen=True)
class Claims:
    """What Slingshot takes of a person from the provider."""

    issuer: str
    subject: str
    email: str
    email_verified: bool
    name: str
    username: str
    groups: tuple[str, ...]


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def provider_origin() -> str | None:
    """The provider's scheme, host and port, or None without one."""
    if not settings.OIDC_ISSUER:
        return None
    parts = urlsplit(settings.OIDC_ISSUER)
    return f"{parts.scheme}://{parts.netloc}"


@cache
def _client(issuer: str, client_id: str, client_secret: str, scopes: str, timeout: float):
    registry = OAuth()
    registry.register(
        "sso",
        client_id=client_id,
        client_secret=client_secret,
        server_metadata_url=f"{issuer}/.well-known/openid-configuration",
        client_kwargs={"scope": scopes, "code_challenge_method": "S256", "default_timeout": timeout},
    )
    return registry.create_client("sso")


def client():
    """Authlib's client of the provider the settings name (one a setting)."""
    return _client(
        settings.OIDC_ISSUER,
        settings.OIDC_CLIENT_ID,
        settings.OIDC_CLIENT_SECRET,
        settings.OIDC_SCOPES,
        settings.OIDC_TIMEOUT_SECONDS,
    )


_reachable: dict[str, tuple[float, bool]] = {}


def reachable() -> bool:
    """Whether the provider answered its discovery document lately: asked
    at most every REACHABLE_KEPT seconds a process, for OIDC_TIMEOUT_SECONDS
    at most (capped at 2 s, as the sign-in page waits for it)."""
    issuer = settings.OIDC_ISSUER
    at, answer = _reachable.get(issuer, (float("-inf"), False))
    if time.monotonic() - at < REACHABLE_KEPT:
        return answer
    try:
        with requests.get(
            f"{issuer}/.well-known/openid-configuration", timeout=min(2.0, settings.OIDC_TIMEOUT_SECONDS)
        ) as reply:
            answer = reply.status_code == 200
    except requests.RequestException as exc:
        log.warning("the OpenID provider %s cannot be reached: %s", issuer, exc)
        answer = False
    _reachable[issuer] = (time.monotonic(), answer)
    return answer


def forget_reachability() -> None:
    _reachable.clear()


def begin(request, redirect_uri: str, *, silent: bool = False, id_token_hint: str | None = None):
    """The redirect to the provider's sign-in; SignInRefused if it cannot be
    reached. `silent`: the provider answers at once, without a page of its
    own (prompt=none), whether the person it has signed in may still come."""
    extra = {"prompt": "none", **({"id_token_hint": id_token_hint} if id_token_hint else {})} if silent else {}
    try:
        return client().authorize_redirect(request, redirect_uri, **extra)
    except (requests.RequestException, OAuthError, ValueError) as exc:
        _reachable[settings.OIDC_ISSUER] = (time.monotonic(), False)
        raise SignInRefused(
            f"{settings.OIDC_NAME} cannot be reached right now; sign in with your password.", error=UNREACHABLE
        ) from exc


def finish(request) -> tuple[Claims, str | None]:
    """The person the provider's answer (the callback's request) names, and
    their ID token (for the provider's sign-out); SignInRefused when the
    provider refused, or its answer does not hold (a state not ours, a code
    used already, an ID token for another client, a wrong nonce)."""
    sso = client()
    if request.method == "GET" and request.GET.get("error"):
        # Authlib reports the provider's error before it checks the state:
        # an error is the provider's only with a state this session began.
        state = request.GET.get("state")
        if not state or not sso.framework.get_state_data(request.session, state):
            raise SignInRefused(f"{settings.OIDC_NAME}'s answer could not be checked: try again.")
        sso.framework.clear_state_data(request.session, state)
    try:
        token = sso.authorize_access_token(request)
        userinfo = sso.userinfo(token=token)
    except OAuthError as exc:
        if exc.error == "access_denied":
            raise SignInRefused(f"{settings.OIDC_NAME} did not let you in.", error=exc.error) from exc
        raise SignInRefused(
            f"Signing in with {settings.OIDC_NAME} failed ({exc.error}): try again.", error=exc.error or ""
        ) from exc
    except (JoseError, ValueError, KeyError) as exc:
        raise SignInRefused(f"{settings.OIDC_NAME}'s answer could not be checked: try again.") from exc
    except requests.RequestException as exc:
        raise SignInRefused(
            f"{settings.OIDC_NAME} cannot be reached right now; sign in with your password.", error=UNREACHABLE
        ) from exc
    claims = token.get("userinfo") or {}
    if not claims.get("sub") or userinfo.get("sub") != claims["sub"]:
        raise SignInRefused(f"{settings.OIDC_NAME}'s answer could not be checked: try again.")
    merged = {**userinfo, **claims}
    groups = merged.get(settings.OIDC_GROUPS_CLAIM) or []
    if isinstance(groups, str):
        groups = [groups]
    return (
        Claims(
            issuer=str(claims.get("iss") or settings.OIDC_ISSUER),
            subject=str(claims["sub"]),
            email=str(merged.get("email") or ""),
            email_verified=merged.get("email_verified") is True,
            name=str(merged.get("name") or ""),
            username=str(merged.get("preferred_username") or ""),
            groups=tuple(str(group) for group in groups if isinstance(group, str | int)),
        ),
        token.get("id_token"),
    )


def refused_by_provider(user) -> None:
    """The provider refused the person a sign-in (a session's check found
    them gone or barred there): deactivated here, their sessions ended, and
    their API tokens refused from the next request, as SCIM's and an
    admin's deactivation do. An admin reactivates them."""
    user.is_active = False
    user.save(update_fields=["is_active"])
    end_sessions(user)
    log.warning("%s deactivated: %s refused them a sign-in", user.get_username(), settings.OIDC_NAME)


def identity_of(claims: Claims) -> SsoIdentity | None:
    return SsoIdentity.objects.filter(issuer=claims.issuer, subject=claims.subject).select_related("user").first()


def local_account_for(claims: Claims):
    """A local account (one with a password) with the person's e-mail, which
    the provider says is verified: theirs to link by confirming its password."""
    if not (claims.email and claims.email_verified):
        return None
    return (
        get_user_model()
        .objects.filter(email__iexact=claims.email, is_active=True, sso_identities__isnull=True)
        .exclude(password__startswith="!")
        .order_by("pk")
        .first()
    )


@transaction.atomic
def link(*, claims: Claims, user) -> SsoIdentity:
    """Ties the provider's person to `user` from now on."""
    identity, _ = SsoIdentity.objects.get_or_create(
        issuer=claims.issuer, subject=claims.subject, defaults={"user": user, "last_sign_in_at": datetime.now(UTC)}
    )
    return identity


def person_for(claims: Claims):
    """The user the provider's person signs in as: the one tied to their
    `iss` and `sub`, else a new one (no password: they sign in through the
    provider), named after their preferred user name or e-mail."""
    identity = identity_of(claims)
    if identity is None:
        identity = _make_person(claims)
    SsoIdentity.objects.filter(pk=identity.pk).update(last_sign_in_at=datetime.now(UTC))
    return identity.user


def _make_person(claims: Claims) -> SsoIdentity:
    User = get_user_model()
    wanted = _username(claims)
    for attempt in range(20):
        name = wanted if attempt == 0 else f"{wanted[:140]}-{attempt + 1}"
        try:
            with transaction.atomic():
                if User.objects.filter(username__iexact=name).exists():
                    continue
                user = User(username=name, email=claims.email if claims.email_verified else "")
                first, _, last = claims.name.partition(" ")
                user.first_name, user.last_name = first[:150], last[:150]
                user.set_unusable_password()
                user.save()
                return SsoIdentity.objects.create(user=user, issuer=claims.issuer, subject=claims.subject)
        except IntegrityError:
            existing = identity_of(claims)  # made by a sign-in of theirs at the same moment
            if existing is not None:
                return existing
    raise SignInRefused("No user name could be made for you: ask an admin.")


def _username(claims: Claims) -> str:
    for candidate in (claims.username, claims.email.split("@", 1)[0] if claims.email else ""):
        cleaned = re.sub(r"[^\w.@+-]", "", candidate)[:140]
        if cleaned:
            return cleaned
    return "sso-" + re.sub(r"[^\w]", "", claims.subject)[:20]

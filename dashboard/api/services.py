"""API tokens: creation (the secret is returned once), revocation, lookup."""

import hashlib
import secrets
from datetime import datetime, timedelta

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from .models import ApiToken

TOKEN_PREFIX = "ssk_"
# Writing last_used_at on every request would turn reads into writes.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_digest(raw: str) -> str:
    # Tokens carry 256 random bits, so a fast hash is as safe as a slow one.
    return hashlib.sha256(raw.encode()).hexdigest()


@transaction.atomic
def token_create(
    *, user: AbstractBaseUser, name: str, scope: str = ApiToken.Scope.READ, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": ValidationError("An expiry must be in the future.", code="past")})
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        user=user,
        name=name,
        scope=scope,
        expires_at=expires_at,
        prefix=raw[: len(TOKEN_PREFIX) + 6],
        digest=token_digest(raw),
    )
    token.full_clean()
    token.save()
    return token, raw


def token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_authenticate(raw: str) -> ApiToken | None:
    """The usable token for this secret, or None. Marks it used."""
    try:
        token = ApiToken.objects.select_related("user").get(digest=token_digest(raw))
    except ApiToken.DoesNotExist:
        return None
    now = timezone.now()
    if not token.is_usable(now) or not token.user.is_active:
        return None
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token

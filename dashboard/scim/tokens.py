"""Bearer tokens of the identity provider's SCIM client: made by `manage.py
create_scim_token`, shown once, kept as their SHA-256."""

import hashlib
import secrets
from datetime import timedelta

from django.utils import timezone

from .models import ScimToken

PREFIX = "scim_"
# last_used_at is written at most this often a token.
USE_RESOLUTION = timedelta(minutes=1)


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(*, name: str) -> tuple[ScimToken, str]:
    raw = PREFIX + secrets.token_urlsafe(32)
    return ScimToken.objects.create(name=name, key_hash=_hash(raw)), raw


def token_revoke(*, name: str) -> int:
    return ScimToken.objects.filter(name=name, revoked_at=None).update(revoked_at=timezone.now())


def token_authenticate(raw: str) -> ScimToken | None:
    if not raw.startswith(PREFIX):
        return None
    token = ScimToken.objects.filter(key_hash=_hash(raw), revoked_at=None).first()
    if token is not None and (token.last_used_at is None or timezone.now() - token.last_used_at > USE_RESOLUTION):
        ScimToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token

"""Bearer tokens of the identity provider's SCIM client: made by `manage.py
create_scim_token`, shown once, kept as their SHA-256 as API tokens are (tokens.services.token_digest)."""

import secrets

from django.utils import timezone

from tokens.services import LAST_USED_RESOLUTION, token_digest

from .models import ScimToken

PREFIX = "scim_"


def token_create(*, name: str) -> tuple[ScimToken, str]:
    raw = PREFIX + secrets.token_urlsafe(32)
    return ScimToken.objects.create(name=name, key_hash=token_digest(raw)), raw


def token_revoke(*, name: str) -> int:
    return ScimToken.objects.filter(name=name, revoked_at=None).update(revoked_at=timezone.now())


def token_authenticate(raw: str) -> ScimToken | None:
    if not raw.startswith(PREFIX):
        return None
    token = ScimToken.objects.filter(key_hash=token_digest(raw), revoked_at=None).first()
    if token is not None and (token.last_used_at is None or timezone.now() - token.last_used_at > LAST_USED_RESOLUTION):
        ScimToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token

"""A token's signature: a secret made from a token for clients that sign
their requests rather than send the token itself (the YOURLS API's
`signature`, alone or with a `timestamp`: docs/compatibility.md).

Only a token's SHA-256 is kept, and a signed request carries no token to
hash, so the signature must be one the server can work out again: an HMAC
of the token's digest under a key made from SECRET_KEY. A copy of the
database alone gives no signature; changing SECRET_KEY changes them all,
which is why a backup carries it (`make backup`, docs/operations.md).
A signature stands for its token: refused once the token is revoked or
expired, or its person deactivated, and acting with the token's team and
role. It is shown once, with its token.

A signed request does not say which token signed it: the one whose
signature matches is looked for among every usable token (each signature
worked out once per process)."""

import functools
from collections.abc import Callable

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.crypto import salted_hmac

from .models import ApiToken
from .services import token_by_digest

SIGNATURE_LENGTH = 32  # hex digits, as long as YOURLS' own signatures
_PURPOSE = "slingshot.tokens.signature"


def token_signature(token: ApiToken) -> str:
    return _signature(token.digest, settings.SECRET_KEY)


@functools.lru_cache(maxsize=100_000)
def _signature(digest: str, secret_key: str) -> str:
    return salted_hmac(_PURPOSE, digest, secret=secret_key, algorithm="sha256").hexdigest()[:SIGNATURE_LENGTH]


def token_signed(matches: Callable[[str], bool]) -> ApiToken | None:
    """The usable token whose signature `matches` says yes to, authenticated
    as tokens.services.token_authenticate does (bound to its person, marked
    used); None when no token's does."""
    digests = ApiToken.objects.filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()), revoked_at__isnull=True, user__is_active=True
    ).values_list("digest", flat=True)
    for digest in list(digests):
        if matches(_signature(digest, settings.SECRET_KEY)):
            return token_by_digest(digest)
    return None

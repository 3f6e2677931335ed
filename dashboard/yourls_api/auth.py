"""Who a YOURLS API request comes from, by the parameters YOURLS reads, in
its order (its yourls_is_valid_user):

1. `timestamp` and `signature`: a time-limited signature, the hash of the
   timestamp and a token's signature (tokens/signatures.py) joined, either
   way round; `hash` names the hash (md5, sha1, sha224, sha256, sha384,
   sha512). Without it, md5 (YOURLS 1.10.4's default) or, for a 64-digit
   signature, sha256 (the default after it). The timestamp must be within
   YOURLS_SIGNATURE_LIFETIME seconds of now.
2. `signature` alone, without `timestamp`: an API token (`ssk_...`) or a
   token's signature.
3. `username` and `password`: a person's, only with YOURLS_PASSWORD_AUTH,
   and then throttled as signing in is (django-axes, slingshot/signin.py).

A token acts in its team with its role (teams/access.py), as on /api/v1; a
person signed in by password acts in their personal team. Requests count
against API_THROTTLE_RATE per token (the budget /api/v1 spends too) or per
person; refusals, and every signature that has to be looked for among the
tokens, per address, so that guessing is throttled too."""

import hashlib
import hmac
import re
import time
from dataclasses import dataclass

from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib.auth import authenticate as password_authenticate
from django.contrib.auth.base_user import AbstractBaseUser
from django.http import HttpRequest

from accounts.second_factor import has_second_factor
from slingshot import throttle
from slingshot.proxies import client_address
from slingshot.signin import lockout_message
from teams.models import Team
from teams.services import personal_team
from tokens.models import ApiToken
from tokens.services import TOKEN_PREFIX, token_authenticate
from tokens.signatures import SIGNATURE_LENGTH, token_signed

HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")
_DEFAULT_HASHES = {32: "md5", 64: "sha256"}  # by the length of the signature's hex digits
_PHP_INT = re.compile(r"\s*[+-]?\d+")
PHP_INT_MAX = 2**63 - 1
_HEX = re.compile(r"[0-9a-fA-F]+")

PLEASE_SIGN_IN = "Please log in"
WRONG_PASSWORD = "Invalid username or password"
PASSWORDS_OFF = (
    "Signing in with a user name and password is off here: send an API token or its signature as `signature`."
)
SECOND_FACTOR_ON = (
    "This account signs in with a second factor, which a password alone does not give:"
    " send an API token or its signature as `signature`."
)


@dataclass(frozen=True)
class Caller:
    user: AbstractBaseUser
    team: Team
    token: ApiToken | None  # None: signed in with a password

    @property
    def throttle_caller(self) -> str:
        return throttle.token_caller(self.token.pk) if self.token else throttle.user_caller(self.user.pk)


@dataclass(frozen=True)
class Refusal:
    message: str
    status: int = 403
    retry_after: float | None = None


def php_filled(value: str | None) -> bool:
    """What PHP's !empty() says of a request parameter: given, and neither "" nor "0"."""
    return value is not None and value not in ("", "0")


def php_int(value: str) -> int:
    """PHP's (int) of a string: its leading whole number, else 0; past a
    64-bit integer, the largest one (of that sign)."""
    found = _PHP_INT.match(value)
    if not found:
        return 0
    digits = found[0].strip()
    if len(digits.lstrip("+-")) > 18:
        return -PHP_INT_MAX if digits.startswith("-") else PHP_INT_MAX
    return int(digits)


def _throttled(retry_after: float) -> Refusal:
    seconds = max(1, round(retry_after))
    return Refusal(f"Too many requests: try again in {seconds} seconds.", status=429, retry_after=retry_after)


def identify(request: HttpRequest, params: dict[str, str]) -> Caller | Refusal:
    """The caller, within its request budget, or why not."""
    address = throttle.address_caller(client_address(request))
    signature, timestamp = params.get("signature"), params.get("timestamp")
    found: Caller | Refusal | None = None
    timed = php_filled(timestamp) and php_filled(signature)
    searched = timed or (timestamp is None and php_filled(signature) and not signature.startswith(TOKEN_PREFIX))
    if searched:
        allowed, retry_after = throttle.admit(address)
        if not allowed:
            return _throttled(retry_after)
    if timed:
        found = _token_caller(_timed_token(signature, timestamp, params.get("hash")))
    elif timestamp is None and php_filled(signature):
        if signature.startswith(TOKEN_PREFIX):
            found = _token_caller(token_authenticate(signature))
        elif _HEX.fullmatch(signature) and len(signature) == SIGNATURE_LENGTH:
            signature = signature.lower()
            found = _token_caller(token_signed(lambda secret: hmac.compare_digest(secret, signature)))
    elif php_filled(params.get("username")) and php_filled(params.get("password")):
        found = _password_caller(request, params["username"], params["password"])
    if found is None:
        found = Refusal(WRONG_PASSWORD if "username" in params or "password" in params else PLEASE_SIGN_IN)
    if isinstance(found, Refusal):
        if not searched and found.status != 429:
            allowed, retry_after = throttle.admit(address)
            if not allowed:
                return _throttled(retry_after)
        return found
    allowed, retry_after = throttle.admit(found.throttle_caller)
    return found if allowed else _throttled(retry_after)


def _token_caller(token: ApiToken | None) -> Caller | None:
    return Caller(user=token.user, team=token.team, token=token) if token else None


def _timed_token(signature: str, timestamp: str, hash_name: str | None) -> ApiToken | None:
    if abs(time.time() - php_int(timestamp)) >= settings.YOURLS_SIGNATURE_LIFETIME:
        return None
    signature = signature.lower()
    name = _DEFAULT_HASHES.get(len(signature)) if hash_name is None else hash_name
    if name not in HASHES or not _HEX.fullmatch(signature):
        return None

    def matches(secret: str) -> bool:
        return any(
            hmac.compare_digest(hashlib.new(name, text.encode()).hexdigest(), signature)
            for text in (timestamp + secret, secret + timestamp)
        )

    return token_signed(matches)


def _password_caller(request: HttpRequest, username: str, password: str) -> Caller | Refusal | None:
    if not settings.YOURLS_PASSWORD_AUTH:
        return Refusal(PASSWORDS_OFF)
    user = password_authenticate(request, username=username, password=password)
    if getattr(request, "axes_locked_out", False):
        # Answered here, in the YOURLS API's shape, rather than by axes' middleware.
        request.axes_locked_out = False
        cool_off = get_cool_off(request)
        return Refusal(
            lockout_message(cool_off), status=429, retry_after=cool_off.total_seconds() if cool_off else None
        )
    if user is None:
        return None
    if has_second_factor(user):
        return Refusal(SECOND_FACTOR_ON)
    return Caller(user=user, team=personal_team(user), token=None)

"""Two-factor for local accounts: a code of an authenticator app (TOTP,
django-otp's TOTPDevice), recovery codes for when the app is lost
(django-otp's StaticDevice, each code once), and passkeys
(accounts/passkeys.py). A person with any of them is asked for one after
their password; a passkey also signs in on its own.

A session remembers how it signed in (`SIGNED_IN_WITH`): with single
sign-on, whose provider asks its own factors, or a second factor here, it
meets a team's requirement (Team.require_second_factor); with a password
alone it does not, and the pages send its person to set one up
(accounts.middleware.SecondFactorRequiredMiddleware)."""

import secrets
import time

from django.contrib.auth import login
from django.db import transaction
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from teams.models import Membership

from .models import Passkey

# Session keys: how the session signed in...
SIGNED_IN_WITH = "signed_in_with"
PASSWORD, SECOND_FACTOR, PASSKEY, SSO = "password", "second factor", "passkey", "sso"
STRONG = frozenset({SECOND_FACTOR, PASSKEY, SSO})
# ...and a person whose password was right, waiting for their second factor
# ({"user", "backend", "at", "next"}) for at most this many seconds.
PENDING = "second_factor_pending"
PENDING_SECONDS = 300

# When the session last gave a second factor: changing one's second factors
# takes one given within RECENT_SECONDS (a session taken over cannot swap
# them for its own).
GIVEN_AT = "second_factor_at"
RECENT_SECONDS = 600

RECOVERY_DEVICE = "recovery codes"
RECOVERY_CODES = 10
TOTP_DEVICE = "authenticator app"


def sign_in(request, user, *, backend: str, how: str) -> None:
    """Django's login, and how it was done kept in the session."""
    request.session.pop(PENDING, None)
    login(request, user, backend=backend)  # the session's key changes; what it holds stays
    request.session[SIGNED_IN_WITH] = how
    if how in (SECOND_FACTOR, PASSKEY):
        request.session[GIVEN_AT] = time.time()


def session_is_strong(request) -> bool:
    return request.session.get(SIGNED_IN_WITH) in STRONG


def mark_strong(request) -> None:
    """The person proved a second factor in this session (set one up, or
    gave one when asked)."""
    if request.session.get(SIGNED_IN_WITH) != SSO:
        request.session[SIGNED_IN_WITH] = SECOND_FACTOR
    request.session[GIVEN_AT] = time.time()


def may_change_factors(request) -> bool:
    """Whether the session may change its person's second factors: they
    have none yet, or gave one within RECENT_SECONDS."""
    if not has_second_factor(request.user):
        return True
    return time.time() - request.session.get(GIVEN_AT, 0) <= RECENT_SECONDS


def totp_of(user) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user=user, confirmed=True).first()


def has_second_factor(user) -> bool:
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists() or Passkey.objects.filter(user=user).exists()


def teams_requiring(user) -> list[str]:
    """The names of the person's teams that require a second factor."""
    return list(
        Membership.objects.filter(user=user, team__require_second_factor=True)
        .order_by("team__name")
        .values_list("team__name", flat=True)
    )


def totp_begin(*, user) -> TOTPDevice:
    """A new authenticator app's key, not in use until confirmed by a code
    it shows (totp_confirm); one begun before and never confirmed goes."""
    TOTPDevice.objects.filter(user=user, confirmed=False).delete()
    return TOTPDevice.objects.create(user=user, name=TOTP_DEVICE, confirmed=False)


def totp_pending(*, user) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user=user, confirmed=False).first()


@transaction.atomic
def totp_confirm(*, user, code: str) -> bool:
    """Confirms the app begun, by a code it shows now; it replaces the one
    in use before. Whether the code was right."""
    device = TOTPDevice.objects.select_for_update().filter(user=user, confirmed=False).first()
    if device is None or not device.verify_token(_digits(code)):
        return False
    TOTPDevice.objects.filter(user=user, confirmed=True).delete()
    device.confirmed = True
    device.save(update_fields=["confirmed"])
    return True


def totp_remove(*, user) -> None:
    TOTPDevice.objects.filter(user=user).delete()


@transaction.atomic
def recovery_codes_make(*, user) -> list[str]:
    """New recovery codes, shown to their person once: the earlier ones stop
    working. Ten characters each, shown as two groups of five."""
    device, _ = StaticDevice.objects.get_or_create(user=user, name=RECOVERY_DEVICE)
    device.token_set.all().delete()
    codes = [secrets.token_hex(5) for _ in range(RECOVERY_CODES)]
    StaticToken.objects.bulk_create(StaticToken(device=device, token=code) for code in codes)
    return [f"{code[:5]}-{code[5:]}" for code in codes]


def recovery_codes_left(user) -> int:
    return StaticToken.objects.filter(device__user=user, device__name=RECOVERY_DEVICE).count()


def remove_all(*, user) -> None:
    """Every second factor of a person (a superuser's help for one who lost them)."""
    with transaction.atomic():
        TOTPDevice.objects.filter(user=user).delete()
        StaticDevice.objects.filter(user=user).delete()
        Passkey.objects.filter(user=user).delete()


def verify_code(*, user, code: str) -> str | None:
    """Checks a code the person typed: their app's current code, or one of
    their recovery codes (used up by it). What it was, or None. django-otp
    slows down a device after failures of its own; the sign-in throttle
    counts them too (web/second_factor_views.py)."""
    code = code.strip().lower().replace(" ", "")
    if len(_digits(code)) == 6 and len(code) == 6 and (device := totp_of(user)) is not None:
        return TOTP_DEVICE if device.verify_token(code) else None
    recovery = StaticDevice.objects.filter(user=user, name=RECOVERY_DEVICE).first()
    if recovery is not None and recovery.verify_token(code.replace("-", "")):
        return RECOVERY_DEVICE
    return None


def _digits(code: str) -> str:
    return "".join(ch for ch in code if ch.isdigit())

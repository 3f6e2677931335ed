"""Passkeys (WebAuthn) through py_webauthn (Duo's `webauthn`): the options
a browser's navigator.credentials needs, and the checks of what it answers
(the challenge, the origin, the relying party, the signature and its
counter), the protocol being the library's.

The relying party is the dashboard's own host name (WEBAUTHN_RP_ID, or the
request's host): a passkey made on one name works on that name and its
subdomains only, as browsers enforce. Each ceremony's challenge waits in
the session, used once."""

import json
import secrets
import time

from django.conf import settings
from django.db import transaction
from django.http.request import split_domain_port
from django.utils import timezone
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import parse_authentication_credential_json
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    AuthenticatorTransport,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from .models import Passkey

CHALLENGE = "passkey_challenge"  # session key: {"challenge": hex, "at": time, "for": "register" | "sign-in"}
CHALLENGE_SECONDS = 300
TIMEOUT_MS = 120_000


class PasskeyRefused(Exception):
    """What the browser sent is not a passkey this server takes; the
    message says why, to show."""


def relying_party(request) -> tuple[str, str]:
    """The relying party's id (a host name) and the origin pages are served from."""
    host = request.get_host()
    return settings.WEBAUTHN_RP_ID or split_domain_port(host)[0], f"{request.scheme}://{host}"


def _descriptor(passkey: Passkey) -> PublicKeyCredentialDescriptor:
    transports = []
    for name in passkey.transports or []:
        try:
            transports.append(AuthenticatorTransport(name))
        except ValueError:
            continue
    return PublicKeyCredentialDescriptor(id=bytes(passkey.credential_id), transports=transports or None)


def _remember(request, challenge: bytes, purpose: str, handle: bytes = b"") -> None:
    request.session[CHALLENGE] = {
        "challenge": challenge.hex(),
        "at": time.time(),
        "for": purpose,
        "handle": handle.hex(),
    }


def _take_challenge(request, purpose: str) -> tuple[bytes, bytes]:
    """The challenge of the ceremony begun, and the user handle it offered."""
    waiting = request.session.pop(CHALLENGE, None)
    if not waiting or waiting.get("for") != purpose or time.time() - waiting.get("at", 0) > CHALLENGE_SECONDS:
        raise PasskeyRefused("That took too long, or was asked for elsewhere: try again.")
    return bytes.fromhex(waiting["challenge"]), bytes.fromhex(waiting.get("handle", ""))


def user_handle_of(user) -> bytes:
    """The person's WebAuthn user id: random, the same for all their passkeys."""
    existing = Passkey.objects.filter(user=user).values_list("user_handle", flat=True).first()
    return bytes(existing) if existing is not None else secrets.token_bytes(32)


def registration_options(request, user) -> str:
    """JSON of the options for making a passkey of `user` (signed in)."""
    rp_id, _ = relying_party(request)
    handle = user_handle_of(user)
    options = generate_registration_options(
        rp_id=rp_id,
        rp_name="Slingshot",
        user_name=user.get_username(),
        user_display_name=user.get_full_name() or user.get_username(),
        user_id=handle,
        timeout=TIMEOUT_MS,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
        exclude_credentials=[_descriptor(passkey) for passkey in Passkey.objects.filter(user=user)],
    )
    _remember(request, options.challenge, "register", handle)
    return options_to_json(options)


def register(request, user, *, credential: dict, name: str) -> Passkey:
    """Checks the browser's answer to registration_options and keeps the passkey."""
    challenge, handle = _take_challenge(request, "register")
    rp_id, origin = relying_party(request)
    try:
        verified = verify_registration_response(
            credential=credential, expected_challenge=challenge, expected_rp_id=rp_id, expected_origin=origin
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise PasskeyRefused(f"The passkey was not made: {exc}") from None
    if Passkey.objects.filter(credential_id=verified.credential_id).exists():
        raise PasskeyRefused("That passkey is in use already.")
    transports = (credential.get("response") or {}).get("transports") or []
    return Passkey.objects.create(
        user=user,
        name=(name or "").strip()[:100] or "Passkey",
        credential_id=verified.credential_id,
        public_key=verified.credential_public_key,
        user_handle=handle,
        sign_count=verified.sign_count,
        transports=[str(t) for t in transports][:10],
    )


def authentication_options(request, user=None) -> str:
    """JSON of the options for signing in: with `user`'s passkeys when their
    password has named them (a second factor), or any passkey of this site
    the browser holds (a sign-in of its own, which must verify its user)."""
    rp_id, _ = relying_party(request)
    allowed = [_descriptor(passkey) for passkey in Passkey.objects.filter(user=user)] if user is not None else []
    options = generate_authentication_options(
        rp_id=rp_id,
        timeout=TIMEOUT_MS,
        allow_credentials=allowed,
        user_verification=UserVerificationRequirement.PREFERRED if user else UserVerificationRequirement.REQUIRED,
    )
    _remember(request, options.challenge, "sign-in")
    return options_to_json(options)


def authenticate(request, *, credential: dict, user=None) -> Passkey:
    """Checks the browser's answer to authentication_options: the passkey it
    used (of `user` when given), its counter and last use updated."""
    challenge, _ = _take_challenge(request, "sign-in")
    rp_id, origin = relying_party(request)
    try:
        parsed = parse_authentication_credential_json(json.dumps(credential))
    except (WebAuthnException, ValueError, TypeError) as exc:
        raise PasskeyRefused(f"That is not a passkey's answer: {exc}") from None
    with transaction.atomic():
        passkey = Passkey.objects.select_for_update().filter(credential_id=parsed.raw_id).first()
        if passkey is None or (user is not None and passkey.user_id != user.pk):
            raise PasskeyRefused("That passkey is not known here.")
        if parsed.response.user_handle is not None and bytes(parsed.response.user_handle) != bytes(passkey.user_handle):
            raise PasskeyRefused("That passkey is not known here.")
        try:
            verified = verify_authentication_response(
                credential=parsed,
                expected_challenge=challenge,
                expected_rp_id=rp_id,
                expected_origin=origin,
                credential_public_key=bytes(passkey.public_key),
                credential_current_sign_count=passkey.sign_count,
                require_user_verification=user is None,
            )
        except (WebAuthnException, ValueError) as exc:
            raise PasskeyRefused(f"The passkey was refused: {exc}") from None
        passkey.sign_count = verified.new_sign_count
        passkey.last_used_at = timezone.now()
        passkey.save(update_fields=["sign_count", "last_used_at"])
    return passkey

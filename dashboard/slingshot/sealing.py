"""Secrets the server must read again (an import's API key, a webhook's
signing secret): encrypted at rest (Fernet, from `cryptography`: AES with
an HMAC) with a key derived from SECRET_KEY for each purpose, so that a
copy of the database alone does not give them away."""

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


class Unreadable(Exception):
    """Sealed with another SECRET_KEY."""


def _fernet(purpose: bytes) -> Fernet:
    key = HKDF(algorithm=SHA256(), length=32, salt=None, info=purpose).derive(settings.SECRET_KEY.encode())
    return Fernet(base64.urlsafe_b64encode(key))


def seal(secret: str, *, purpose: bytes) -> bytes:
    return _fernet(purpose).encrypt(secret.encode()) if secret else b""


def unseal(sealed: bytes, *, purpose: bytes) -> str:
    if not sealed:
        return ""
    try:
        return _fernet(purpose).decrypt(bytes(sealed)).decode()
    except InvalidToken:
        raise Unreadable() from None

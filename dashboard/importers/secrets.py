"""An import's API key or token while its job waits or runs: encrypted
(Fernet, from `cryptography`: AES with an HMAC) with a key derived from
SECRET_KEY, so that a copy of the database alone does not give it away,
and emptied from the job as it ends (importers/jobs.py)."""

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from .sources.base import SourceError


def _fernet() -> Fernet:
    key = HKDF(algorithm=SHA256(), length=32, salt=None, info=b"slingshot import secrets").derive(
        settings.SECRET_KEY.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


def seal(secret: str) -> bytes:
    return _fernet().encrypt(secret.encode()) if secret else b""


def unseal(sealed: bytes) -> str:
    if not sealed:
        return ""
    try:
        return _fernet().decrypt(bytes(sealed)).decode()
    except InvalidToken:
        raise SourceError(
            "The import's key cannot be read: SECRET_KEY changed since it was given. Start the import again."
        ) from None

"""An import's API key or token while its job waits or runs: sealed
(slingshot/sealing.py), and emptied from the job as it ends
(importers/jobs.py)."""

from slingshot import sealing

from .sources.base import SourceError

_PURPOSE = b"slingshot import secrets"


def seal(secret: str) -> bytes:
    return sealing.seal(secret, purpose=_PURPOSE)


def unseal(sealed: bytes) -> str:
    try:
        return sealing.unseal(sealed, purpose=_PURPOSE)
    except sealing.Unreadable:
        raise SourceError(
            "The import's key cannot be read: SECRET_KEY changed since it was given. Start the import again."
        ) from None

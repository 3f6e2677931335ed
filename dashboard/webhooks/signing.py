"""Webhook signatures as the Standard Webhooks spec has them
(standardwebhooks.com): a secret `whsec_` + base64 of random bytes, and
`webhook-signature: v1,<base64 HMAC-SHA256 of id.timestamp.body>`, one
per secret in use, space-separated. Signed with the spec's own library
(`standardwebhooks`), so that its verify() is the receiver's."""

import base64
import functools
import secrets
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook as SpecWebhook

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


@functools.lru_cache(maxsize=1024)
def _signer(secret: str) -> SpecWebhook:
    return SpecWebhook(secret)


def headers(signing_secrets: list[str], msg_id: str, timestamp: int, body: str) -> dict[str, str]:
    """The three headers of a delivery of `body` signed with each secret."""
    moment = datetime.fromtimestamp(timestamp, UTC)
    signature = " ".join(_signer(secret).sign(msg_id, moment, body) for secret in signing_secrets)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature,
        "content-type": "application/json",
    }

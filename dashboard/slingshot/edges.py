"""What tells a call from an edge apart: the edges' secret,
EDGE_DASHBOARD_SECRET, as `Authorization: Bearer` (docs/contract.md).
The dashboard answers such calls ahead of its other middleware
(web/edge_calls.py, yourls_api/views.py)."""

import hmac

from django.conf import settings
from django.http import HttpRequest


def from_edge(request: HttpRequest) -> bool:
    """Whether the request carries the edges' secret (never, while it is unset)."""
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    return bool(
        settings.EDGE_DASHBOARD_SECRET
        and scheme == "Bearer"
        and hmac.compare_digest(secret.encode(), settings.EDGE_DASHBOARD_SECRET.encode())
    )

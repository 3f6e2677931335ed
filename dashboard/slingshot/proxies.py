"""Who is asking: the client's address as seen through TRUSTED_PROXY_COUNT
reverse proxies.

With no trusted proxy (the default) it is the connection's own address and
X-Forwarded-For is ignored, since anyone can send one. Behind N proxies, each
of which appends the address it was connected from, the client is the Nth
address from the right of X-Forwarded-For: everything left of it was sent by
the client and proves nothing. This is Django REST framework's rule with
NUM_PROXIES (settings/api.py sets it from the same variable), so sign-in
throttling (django-axes), the API's per-address throttle and the /metrics
allow-list all see the same address.
"""

import ipaddress

from django.http import HttpRequest
from rest_framework.throttling import BaseThrottle

_DRF = BaseThrottle()


def client_address(request: HttpRequest) -> str | None:
    """The client's address; REMOTE_ADDR when what the proxies say is not an
    address at all (a proxy count larger than the proxies really there)."""
    address = _DRF.get_ident(request)
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return request.META.get("REMOTE_ADDR") or None
    return address

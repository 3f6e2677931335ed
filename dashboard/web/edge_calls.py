"""What the edges ask the dashboard (docs/contract.md, "Password checks"):
whether a link's password is right (links/unlocking.py).

Answered ahead of the rest of the middleware, as the operators' endpoints
are (slingshot/operators.py): the edge reaches the dashboard by whatever
name its network gives it (EDGE_DASHBOARD_URL), not one of ALLOWED_HOSTS,
and over the plain HTTP of that network. Nothing here builds a URL from
the Host header; the caller proves it is an edge with EDGE_DASHBOARD_SECRET.
"""

import json

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from links.unlocking import check_link_password
from slingshot.edges import from_edge
from slingshot.text import unstorable

PASSWORD_CHECK_PATH = "/internal/link-password"
# A check is a link id, an address and a password of at most 128 characters.
BODY_MAX_BYTES = 4096


class EdgeCallsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info != PASSWORD_CHECK_PATH:
            return self.get_response(request)
        request.operator_endpoint = "link-password"  # the view label of its metrics
        return link_password_check(request)


def _refusal(status: int, error: str) -> JsonResponse:
    return JsonResponse({"error": error}, status=status)


def link_password_check(request: HttpRequest) -> HttpResponse:
    """POST {"link": id, "password": "...", "address": "..."} ->
    {"outcome": "right" | "wrong" | "locked" | "unavailable"}, with `scope`
    and `retry_after` (seconds) when locked."""
    if not settings.EDGE_DASHBOARD_SECRET:
        return _refusal(503, "EDGE_DASHBOARD_SECRET is not set: no password can be checked")
    if not from_edge(request):
        return _refusal(401, "an edge's Authorization: Bearer EDGE_DASHBOARD_SECRET is required")
    if request.method != "POST":
        return _refusal(405, "POST only")
    length = request.headers.get("Content-Length") or "0"
    if not length.isdigit() or int(length) > BODY_MAX_BYTES:
        return _refusal(413, f"a check is at most {BODY_MAX_BYTES} bytes")
    try:
        body = json.loads(request.body)
        link_id, password, address = body["link"], body["password"], body["address"]
    except (ValueError, TypeError, KeyError):
        return _refusal(400, "a check is a JSON object with link, password and address")
    if not (type(link_id) is int and 0 < link_id < 2**63) or not all(
        isinstance(value, str) for value in (password, address)
    ):
        return _refusal(400, "link is a link id; password and address are strings")
    if unstorable(address):  # it names Redis keys; an edge sends its remote address
        return _refusal(400, "address is not text")
    check = check_link_password(link_id=link_id, password=password, address=address[:64] or "unknown")
    return JsonResponse(check.as_json())

"""What tells a call from an edge apart: the edges' secret,
EDGE_DASHBOARD_SECRET, as `Authorization: Bearer` (docs/contract.md).
The dashboard answers such calls ahead of its other middleware
(web/edge_calls.py, yourls_api/views.py)."""

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


def from_edge(request: HttpRequest) -> bool:
    """Whether the request carries the edges' secret (never, while it is unset)."""
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    return bool(
        settings.EDGE_DASHBOARD_SECRET
        and scheme == "Bearer"
        and hmac.compare_digest(secret.encode(), settings.EDGE_DASHBOARD_SECRET.encode())
    )


class EdgePassMiddleware:
    """What an edge passes on from a short domain (`path`: the YOURLS API,
    the report page), answered ahead of the other middleware: the edges'
    secret required (401), and the visitor's address the edge saw
    (X-Slingshot-Address) checked (400) and given to `answer`. `label` names
    the answer in the request metrics."""

    path: str
    label: str

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info != self.path:
            return self.get_response(request)
        request.operator_endpoint = self.label  # the view label of its metrics
        if not from_edge(request):
            return JsonResponse(
                {"error": "an edge's Authorization: Bearer EDGE_DASHBOARD_SECRET is required"}, status=401
            )
        address = request.headers.get("X-Slingshot-Address", "")
        try:
            ipaddress.ip_address(address)
        except ValueError:
            return JsonResponse({"error": "X-Slingshot-Address must be the visitor's address"}, status=400)
        return self.answer(request, address)

    def answer(self, request: HttpRequest, address: str) -> HttpResponse:
        raise NotImplementedError

"""The endpoints for operators, /healthz (slingshot/health.py) and /metrics
(slingshot/metrics.py), answered ahead of the rest of the middleware: before
Django checks the Host header against ALLOWED_HOSTS, which a container's
health check on 127.0.0.1 or Prometheus scraping by a service name would not
match, and before SECURE_SSL_REDIRECT would send them to an HTTPS they do
not speak. Neither builds a URL from the Host header, which is what
ALLOWED_HOSTS guards; /metrics checks the client's address itself."""

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed

from . import health, metrics

ENDPOINTS = {"/healthz": health.healthz, "/metrics": metrics.metrics}


class OperatorEndpointsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = ENDPOINTS.get(request.path_info)
        if view is None:
            return self.get_response(request)
        request.operator_endpoint = request.path_info.lstrip("/")  # the view label of its metrics
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        return view(request)

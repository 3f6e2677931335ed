"""Prometheus metrics with prometheus_client: the dashboard's requests, at
/metrics, and the HTTP server on which the long-running commands
(import_clicks, run_publisher) serve their own.

The dashboard's counts are kept per process; under gunicorn with
PROMETHEUS_MULTIPROC_DIR set (settings/metrics.py), every worker writes them to that
folder and a scrape adds them all up. The latency of a streamed response
(the links' CSV export) is the time to its first byte.
"""

import ipaddress
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.core.management import CommandError
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily

from .proxies import client_address

log = logging.getLogger(__name__)

METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

REQUESTS = Counter(
    "slingshot_dashboard_requests_total",
    "Requests answered by the dashboard, by method, view and status.",
    ["method", "view", "status"],
)
LATENCY = Histogram(
    "slingshot_dashboard_request_duration_seconds",
    "Time to answer a request, by method and view.",
    ["method", "view"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)


def view_label(request: HttpRequest) -> str:
    """The URL pattern's name (`web:overview`, `link-list`): a label with as
    many values as the dashboard has views, whatever the paths asked for."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.view_name
    endpoint = getattr(request, "operator_endpoint", None)  # slingshot/operators.py
    if endpoint:
        return endpoint
    if request.path_info.startswith(settings.STATIC_URL):
        return "static"
    return "unresolved"


class RequestMetricsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in METHODS else "other"
        view = view_label(request)
        REQUESTS.labels(method, view, str(response.status_code)).inc()
        LATENCY.labels(method, view).observe(time.perf_counter() - started)
        return response


def address_allowed(address: str | None) -> bool:
    """Whether DASHBOARD_METRICS_ALLOW holds this address (an IPv4 address
    mapped into IPv6 counts as the IPv4 one)."""
    try:
        parsed = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    if parsed.version == 6 and parsed.ipv4_mapped:
        parsed = parsed.ipv4_mapped
    return any(parsed in network for network in settings.DASHBOARD_METRICS_ALLOW)


def metrics(request: HttpRequest) -> HttpResponse:
    """The dashboard's metrics, for addresses in DASHBOARD_METRICS_ALLOW."""
    if not address_allowed(client_address(request)):
        return HttpResponse(
            "Forbidden: this address may not read metrics (DASHBOARD_METRICS_ALLOW).\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    if settings.PROMETHEUS_MULTIPROC_DIR:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    response = HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response


# --- the commands' metrics ------------------------------------------------------


class ScrapeGauges:
    """Gauges read from their source when Prometheus scrapes, rather than kept
    up to date by a loop that may be stuck: `read` returns {name: value}.
    A gauge `<up>` says whether the source answered; when it did not, the
    others are left out of that scrape, which still answers at once."""

    def __init__(
        self,
        *,
        read: Callable[[], dict[str, float]],
        documentation: dict[str, str],
        up: tuple[str, str],
        errors: tuple[type[Exception], ...],
    ):
        self.read, self.documentation, self.up, self.errors = read, documentation, up, errors

    def collect(self):
        try:
            values = self.read()
        except self.errors as exc:
            log.warning("metrics: %s: %s: %s", self.up[0], exc.__class__.__name__, exc)
            yield GaugeMetricFamily(*self.up, value=0)
            return
        yield GaugeMetricFamily(*self.up, value=1)
        for name, value in values.items():
            yield GaugeMetricFamily(name, self.documentation[name], value=value)


def add_metrics_arguments(parser, *, port: int | None, address: str, setting: str) -> None:
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=port,
        help=f"serve Prometheus metrics over HTTP on this port (default: {setting}, or none)",
    )
    parser.add_argument(
        "--metrics-address",
        default=address,
        help=f"the address to serve them on (default: {setting.removesuffix('PORT')}ADDRESS, or 127.0.0.1)",
    )


def serve_metrics(registry: CollectorRegistry, *, port: int | None, address: str, who: str) -> None:
    """Serves the registry on address:port from a thread of this process; nothing when port is None."""
    if port is None:
        return
    if not 0 < port < 65536:
        raise CommandError(f"{who}: --metrics-port must be between 1 and 65535")
    try:
        start_http_server(port, addr=address, registry=registry)
    except OSError as exc:
        raise CommandError(f"{who}: cannot serve metrics on {address}:{port}: {exc}") from None
    log.info("%s: metrics on http://%s:%d/metrics", who, address, port)

"""What every Shlink view shares: the API key, throttling, problems for
errors, and how Shlink writes dates, pages and domains."""

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from links.domains import default_domain, domain_for_host
from links.fields import MOMENT
from links.models import Domain
from slingshot.text import check_storable, shown, unstorable_in
from tokens.models import ApiToken
from tokens.services import token_authenticate

from ..parsers import JSONParser
from ..permissions import TokenScope
from ..throttling import TokenOrUserRateThrottle
from .problems import Problem, exception_handler, invalid_data

API_KEY_HEADER = "X-Api-Key"
# Shlink's name for the default domain in filters.
DEFAULT_DOMAIN = "DEFAULT"
DEFAULT_PORTS = {"http": 80, "https": 443}
# The most items a page holds, whatever is asked (Shlink's -1, "all", included).
MAX_ITEMS_PER_PAGE = 5000
# The last page whose first item's offset PostgreSQL's OFFSET (a bigint) can hold.
MAX_PAGE = (2**63 - 1) // MAX_ITEMS_PER_PAGE


class ApiKeyAuthentication(BaseAuthentication):
    """`X-Api-Key: <a Slingshot API token>`: request.auth is the ApiToken,
    acting in its team as tokens.services.token_authenticate says. A key
    missing or wrong authenticates nobody here; ApiKeyRequired says which,
    after the throttle has counted the request (ShlinkView.initial)."""

    def authenticate(self, request):
        raw = request.META.get("HTTP_" + API_KEY_HEADER.upper().replace("-", "_"), "")
        token = token_authenticate(raw) if raw else None
        return (token.user, token) if token else None


class ApiKeyRequired(BasePermission):
    def has_permission(self, request, view):
        if isinstance(request.auth, ApiToken):
            return True
        if request.META.get("HTTP_X_API_KEY"):
            raise Problem(401, "invalid-api-key", "Invalid API key", "Provided API key does not exist or is invalid.")
        raise Problem(
            401,
            "missing-authentication",
            "Invalid authorization",
            f'Expected one of the following authentication headers, ["{API_KEY_HEADER}"], but none were provided',
            expectedHeaders=[API_KEY_HEADER],
        )


class ShlinkView(APIView):
    """A Shlink operation: an API key with the scope and team rules of
    /api/v1 (a read token reads), throttled as /api/v1 is, JSON in and out,
    problem documents for errors."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [ApiKeyRequired, TokenScope]
    throttle_classes = [TokenOrUserRateThrottle]
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    # Not in Slingshot's OpenAPI schema: Shlink's own spec documents this API.
    schema = None
    # The type of a 403 of this view, when Shlink gives it one.
    forbidden_code: str | None = None

    def get_exception_handler(self):
        return exception_handler

    def initial(self, request, *args, **kwargs):
        # As APIView's, but the throttle counts before the key is judged:
        # a wrong key is throttled by address like any other request.
        self.format_kwarg = self.get_format_suffix(**kwargs)
        request.accepted_renderer, request.accepted_media_type = self.perform_content_negotiation(request)
        request.version, request.versioning_scheme = self.determine_version(request, *args, **kwargs)
        self.perform_authentication(request)
        self.check_throttles(request)
        self.check_permissions(request)
        check_text([*kwargs.items(), *request.query_params.lists()])

    def body(self) -> dict:
        """The JSON object sent; {} for none."""
        data = self.request.data
        if not isinstance(data, dict):
            raise invalid_data({"body": ["Send a JSON object."]})
        check_text(data.items())
        return data


def check_text(pairs) -> None:
    """Query parameters or body members holding a NUL or a lone surrogate
    are refused by name, before anything quotes or stores them."""
    for name, value in pairs:
        try:
            check_storable([name, value])
        except ValidationError as exc:
            raise invalid_data({shown(name) if not unstorable_in(name) else "body": exc.messages}) from None


# --- values as Shlink writes and reads them ------------------------------------


def atom(moment: datetime | None) -> str | None:
    """A time as Shlink writes it: ISO 8601 to the second, in UTC as +00:00."""
    return None if moment is None else moment.astimezone(UTC).replace(microsecond=0).isoformat()


def moment(value, name: str) -> datetime | None:
    """A date or time of Shlink's input (ISO 8601; without an offset, UTC); None for null or ""."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_data({name: ["Enter a date as an ISO 8601 string."]})
    try:
        return MOMENT.read(value)
    except (ValueError, OverflowError) as exc:
        raise invalid_data({name: [str(exc)]}) from None


def flag(value, name: str, *, default: bool = False) -> bool:
    """A boolean of a query ("true" or "false") or a body (true or false)."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise invalid_data({name: ["Use true or false."]})


def whole(value, name: str, *, least: int | None = None, most: int | None = None) -> int | None:
    """A whole number of a query (text) or a body (a number); None for none."""
    if value is None or value == "":
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdecimal():  # isdigit takes "²", which int() refuses
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_data({name: ["Enter a whole number."]})
    if (least is not None and value < least) or (most is not None and value > most):
        bounds = f"from {least} to {most}" if most is not None else f"at least {least}"
        raise invalid_data({name: [f"Enter a whole number {bounds}."]})
    return value


def authority(domain: Domain) -> str:
    """A domain as Shlink names it (listDomains, a short URL's `domain`):
    the authority of its short URLs, its host with the port where
    EDGE_BASE_URL has one. Shlink's web client asks each domain it lists
    for <scheme>://<domain>/rest/v3/health, which the edge answers."""
    return urlsplit(domain.base_url()).netloc


def host_named(value: str) -> str:
    """The host of a domain a client names, as authority() gives it or by
    its host alone: a port is dropped when it is the one the short URLs
    use (EDGE_BASE_URL's, else its scheme's default), and kept otherwise,
    which names no domain Slingshot serves."""
    edge = urlsplit(settings.EDGE_BASE_URL)
    host, colon, port = value.rpartition(":")
    if not colon or not port.isdecimal() or int(port) != (edge.port or DEFAULT_PORTS.get(edge.scheme)):
        return value
    if host.startswith("[") and host.endswith("]"):  # an IPv6 address, as a URL writes it
        return host[1:-1]
    return value if ":" in host else host


def domain_named(value: str | None, name: str = "domain") -> Domain | None:
    """The domain a filter names: None for none, the default domain for
    DEFAULT, or the domain of its authority or host (host_named); a
    problem for one Slingshot does not serve."""
    if value in (None, ""):
        return None
    if value == DEFAULT_DOMAIN:
        return default_domain()
    try:
        return domain_for_host(host_named(value))
    except Domain.DoesNotExist:
        raise Problem(
            404,
            "domain-not-found",
            "Domain not found",
            f'Domain with authority "{value}" could not be found',
            authority=value,
        ) from None


def shown_domain(domain: Domain) -> str | None:
    """A short URL's domain as Shlink shows it: its authority, null for the default domain."""
    return None if domain.is_default else authority(domain)


# --- pages ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Paging:
    page: int
    per_page: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    def of(self, total: int, shown_now: int) -> dict:
        """Shlink's pagination object for a page of `shown_now` items of `total`."""
        return {
            "currentPage": self.page,
            "pagesCount": math.ceil(total / self.per_page),
            "itemsPerPage": self.per_page,
            "itemsInCurrentPage": shown_now,
            "totalItems": total,
        }


def paging(query, *, default: int | None) -> Paging:
    """`page` (from 1) and `itemsPerPage` (-1 or missing where `default` is
    None: all of them, as far as MAX_ITEMS_PER_PAGE goes)."""
    page = whole(query.get("page"), "page", least=1, most=MAX_PAGE) or 1
    per_page = whole(query.get("itemsPerPage"), "itemsPerPage", least=-1)
    if per_page is None or per_page < 1:
        per_page = default if per_page is None and default is not None else MAX_ITEMS_PER_PAGE
    return Paging(page=page, per_page=min(per_page, MAX_ITEMS_PER_PAGE))

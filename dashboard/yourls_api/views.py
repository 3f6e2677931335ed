"""yourls-api.php: the YOURLS API (docs/compatibility.md), on the dashboard
at /yourls-api.php, and on every short domain through the edge, which
passes it here as /internal/yourls-api with the edges' secret, the
visitor's address and the host asked for (nginx.conf, docs/contract.md).
The edge's calls are answered ahead of the rest of the middleware, as
web/edge_calls.py's are: the edge reaches the dashboard by a name of its
network, not one of ALLOWED_HOSTS.

As YOURLS does: parameters from the query string or a POSTed form (the
form's win), the caller first (auth.py: 403 "Please log in"), then the
`action` (actions.py), answered in `format` (output.py; XML by default),
with `callback` (or `jsonp`) put into the answer."""

from django.core.exceptions import BadRequest, RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.views.decorators.csrf import csrf_exempt

from links.domains import default_domain, domain_for_host
from links.models import Domain
from slingshot.edges import EdgePassMiddleware
from slingshot.text import unstorable

from .actions import ACTIONS, Context
from .auth import Refusal, identify
from .output import SIMPLE, respond

EDGE_PATH = "/internal/yourls-api"
UNKNOWN_ACTION = 'Unknown or missing "action" parameter'


def _params(request: HttpRequest) -> dict[str, str]:
    """PHP's $_REQUEST: the query string's parameters, then a POSTed
    form's over them; the last value of a name given twice."""
    params = {name: request.GET[name] for name in request.GET}
    if request.method == "POST":
        params.update({name: request.POST[name] for name in request.POST})
    return params


def _refused(params: dict[str, str], refusal: Refusal) -> HttpResponse:
    if refusal.status == 403:  # YOURLS' own refusal, with its callback only from `callback`
        answer = {SIMPLE: refusal.message, "message": refusal.message, "errorCode": "403"}
        answer["callback"] = params.get("callback", "")
    else:
        answer = _with_callback(params, {"errorCode": str(refusal.status), "message": refusal.message})
        answer[SIMPLE] = refusal.message
    headers = {"Retry-After": str(max(1, round(refusal.retry_after)))} if refusal.retry_after else None
    return respond(params.get("format", "xml"), answer, headers=headers)


def _with_callback(params: dict[str, str], answer: dict) -> dict:
    if "callback" in params:
        answer["callback"] = params["callback"]
    elif "jsonp" in params:
        answer["callback"] = params["jsonp"]
    return answer


def _bad_request(params: dict[str, str], message: str) -> HttpResponse:
    return respond(params.get("format", "xml"), {"errorCode": "400", "message": message, SIMPLE: message})


def _domain(host: str | None) -> Domain:
    """The domain a request came to: the short domain of the host an edge
    passed, the default domain for any other."""
    try:
        return domain_for_host(host)
    except Domain.DoesNotExist:
        return default_domain()


_UNREADABLE = (MultiPartParserError, RequestDataTooBig, SuspiciousOperation, BadRequest)


def answer(request: HttpRequest, *, host: str | None = None) -> HttpResponse:
    try:
        params = _params(request)
    except _UNREADABLE as exc:
        query = {name: request.GET[name] for name in request.GET}
        return _bad_request(query, f"The request's form could not be read: {exc}")
    for name, value in params.items():
        if unstorable(name) or unstorable(value):
            return _bad_request(params, "Parameters cannot hold null characters.")
    caller = identify(request, params)
    if isinstance(caller, Refusal):
        return _refused(params, caller)
    action = ACTIONS.get(params.get("action", ""))
    if action is None:
        result = {"errorCode": "400", "message": UNKNOWN_ACTION, SIMPLE: UNKNOWN_ACTION}
    else:
        result = action(Context(caller=caller, domain=_domain(host)), params)
    return respond(params.get("format", "xml"), _with_callback(params, result))


@csrf_exempt  # signed by its parameters, never by a cookie
def yourls_api(request: HttpRequest) -> HttpResponse:
    return answer(request)


def error_answer(request: HttpRequest, status: int, detail: str, headers: dict[str, str]) -> HttpResponse:
    """An error the API did not answer itself (the database away, say;
    slingshot/errors.py), in the `format` asked, as its own errors are."""
    try:
        params = _params(request)
    except _UNREADABLE:
        params = {name: request.GET[name] for name in request.GET}
    result = _with_callback(params, {"errorCode": str(status), "message": detail, SIMPLE: detail})
    return respond(params.get("format", "xml"), result, headers=headers)


class EdgeYourlsMiddleware(EdgePassMiddleware):
    """An edge's pass of /yourls-api.php on a short domain. The address
    the edge saw stands for the connection's, so that throttling and
    sign-in lockouts count the visitor, not the edge."""

    path, label = EDGE_PATH, "yourls-api"

    def answer(self, request: HttpRequest, address: str) -> HttpResponse:
        request.META["REMOTE_ADDR"] = address
        request.META.pop("HTTP_X_FORWARDED_FOR", None)
        return answer(request, host=request.headers.get("X-Slingshot-Host"))

"""What Django answers when a request fails before or outside a view, or in
a way no view answers: under each API's paths in that API's own shape
(ERROR_ANSWERS in settings: JSON under /api/, Shlink's problem documents
under /rest/, YOURLS' answers at yourls-api.php), elsewhere Django's own
pages for the dashboard, with its templates (web/templates/404.html and the
others).

A database that does not answer (PostgreSQL restarting or failing over,
its connections used up) is a 503 with Retry-After, not a 500: a request
that changes something does it in one transaction (a link and its outbox
row together), so what failed was done whole or not at all, and can be
sent again."""

import functools
import sys
from collections.abc import Callable

import psycopg
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template import loader
from django.utils.module_loading import import_string
from django.views import defaults

# Seconds a client is asked to wait while the database does not answer: a
# restart of PostgreSQL takes a few.
DATABASE_RETRY_AFTER = 5

# What an API's answer is made by: (request, status, detail, headers) -> response.
ErrorAnswer = Callable[[HttpRequest, int, str, dict[str, str]], HttpResponse]


@functools.cache
def _answers() -> tuple[tuple[str, ErrorAnswer], ...]:
    return tuple((prefix, import_string(dotted)) for prefix, dotted in settings.ERROR_ANSWERS.items())


def _answer(request, status: int, detail: str, headers: dict[str, str] | None = None) -> HttpResponse | None:
    """The answer of the API the request's path is under; None elsewhere."""
    for prefix, answer in _answers():
        if request.path.startswith(prefix):
            return answer(request, status, detail, headers or {})
    return None


class StoreUnavailable(ConnectionError):
    """A store other than the database did not answer, or could not do it
    now (the ClickHouse click store: clicks/clickhouse_clicks.py)."""


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether `exc` says the database did not answer, or could not do it
    now: a connection refused, lost or closed, a server shutting down or
    starting up, a lock or a statement that timed out (Django's
    OperationalError and InterfaceError, and psycopg's own); or the click
    store, when it is not the database (StoreUnavailable)."""
    return isinstance(
        exc, (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError, StoreUnavailable)
    )


def database_unavailable_response(request) -> HttpResponse:
    headers = {"Retry-After": str(DATABASE_RETRY_AFTER)}
    detail = f"The database does not answer just now. Try again in {DATABASE_RETRY_AFTER} seconds."
    answer = _answer(request, 503, detail, headers)
    if answer is not None:
        return answer
    # Rendered without the request: its context (the person, their team)
    # would ask the database again.
    page = loader.get_template("503.html").render()
    return HttpResponse(page, status=503, headers=headers)


def bad_request(request, exception):
    if isinstance(exception, RequestDataTooBig):
        detail = f"The request's body is over the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes."
        answer = _answer(request, 413, detail)
    else:
        answer = _answer(request, 400, "Bad request.")
    return answer or defaults.bad_request(request, exception)


def permission_denied(request, exception):
    answer = _answer(request, 403, "You do not have permission to perform this action.")
    return answer or defaults.permission_denied(request, exception)


def page_not_found(request, exception):
    return _answer(request, 404, "Not found.") or defaults.page_not_found(request, exception)


def server_error(request):
    # Django calls this while it handles the exception, which sys.exc_info() holds.
    if database_unavailable(sys.exc_info()[1]):
        return database_unavailable_response(request)
    answer = _answer(request, 500, "Internal error; it has been logged.")
    return answer or defaults.server_error(request)

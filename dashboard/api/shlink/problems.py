"""Errors as Shlink answers them: RFC 7807 problem details
(application/problem+json) with `type`, `title`, `detail` and `status`,
Shlink's own `type` URIs, and the extra members its clients read
(`invalidElements`, `shortCode`, `customSlug`, `tag`...)."""

from http import HTTPStatus

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response

from links.limits import CreationLimited

from ..exceptions import encodable

SHLINK_ERROR = "https://shlink.io/api/error/"
PROBLEM_JSON = "application/problem+json"
# The types Shlink's error handler gives statuses no error of its own has.
UNTYPED_CODES = {404: "not-found", 500: "internal-server-error"}


class Problem(exceptions.APIException):
    """One problem document. `code` names Shlink's type URI (SHLINK_ERROR +
    code); None: a status Shlink gives no type of its own, typed as its
    error handler types those (https://httpstatus.es/<status>)."""

    def __init__(self, status_code: int, code: str | None, title: str, detail: str, **extra):
        super().__init__(detail)
        self.status_code = status_code
        self.document = {
            "type": SHLINK_ERROR + code if code else f"https://httpstatus.es/{status_code}",
            "title": title,
            "detail": detail,
            "status": status_code,
            **extra,
        }


def invalid_data(errors: dict[str, list[str]]) -> Problem:
    """What Shlink answers for input it refuses: the names of the refused
    elements, and (beyond Shlink) what was wrong with each."""
    said = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
    return Problem(
        400,
        "invalid-data",
        "Invalid data",
        f"Provided data is not valid. {said}" if said else "Provided data is not valid",
        invalidElements=list(errors),
        errors=errors,
    )


def short_url_not_found(short_code: str, domain: str | None) -> Problem:
    extra = {"shortCode": short_code, **({"domain": domain} if domain else {})}
    suffix = f' for domain "{domain}"' if domain else ""
    return Problem(
        404,
        "short-url-not-found",
        "Short URL not found",
        f'No URL found with short code "{short_code}"{suffix}',
        **extra,
    )


def forbidden(detail: str, code: str | None = None) -> Problem:
    return Problem(403, code, "Forbidden tag operation" if code else "Forbidden", detail)


def not_found(request) -> Problem:
    return Problem(404, "not-found", "Not found", f"Cannot {request.method} {request.path}")


def problem_response(problem: Problem, headers: dict | None = None) -> Response:
    return Response(encodable(problem.document), status=problem.status_code, content_type=PROBLEM_JSON, headers=headers)


def error_answer(request, status: int, detail: str, headers: dict[str, str]) -> JsonResponse:
    """An error under /rest/ that no view answered (slingshot/errors.py):
    a body over the size limit, a host not allowed, the database away, a
    bug. Typed as Shlink types a status of no error of its own."""
    if status == 404:
        problem = not_found(request)
    else:
        problem = Problem(status, UNTYPED_CODES.get(status), HTTPStatus(status).phrase, detail)
    return JsonResponse(encodable(problem.document), status=status, content_type=PROBLEM_JSON, headers=headers)


def exception_handler(exc, context):
    """Every error of a Shlink view as a problem document; what no case
    below knows is left to Django (a 500, logged)."""
    headers = {}
    if isinstance(exc, Problem):
        problem = exc
    elif isinstance(exc, (exceptions.PermissionDenied, DjangoPermissionDenied)):
        code = getattr(context.get("view"), "forbidden_code", None)
        problem = forbidden(str(getattr(exc, "detail", exc) or "Not allowed."), code)
    elif isinstance(exc, (exceptions.NotFound, Http404)):
        problem = not_found(context["request"])
    elif isinstance(exc, CreationLimited):
        problem = Problem(429, None, "Too Many Requests", str(exc))
        headers.update(exc.headers())
    elif isinstance(exc, exceptions.Throttled):
        problem = Problem(429, None, "Too Many Requests", str(exc.detail))
        if exc.wait is not None:
            headers["Retry-After"] = str(max(1, round(exc.wait)))
    elif isinstance(exc, exceptions.ParseError):
        problem = Problem(400, "malformed-request-body", "Malformed request body", str(exc.detail))
    elif isinstance(exc, exceptions.MethodNotAllowed):
        problem = Problem(405, None, "Method Not Allowed", str(exc.detail))
    elif isinstance(exc, exceptions.UnsupportedMediaType):
        problem = Problem(415, None, "Unsupported Media Type", str(exc.detail) + " Send application/json.")
    elif isinstance(exc, exceptions.APIException):
        problem = Problem(exc.status_code, None, exc.default_code.replace("_", " ").capitalize(), str(exc.detail))
    else:
        return None
    return problem_response(problem, headers)

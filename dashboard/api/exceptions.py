from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from links.limits import CreationLimited
from slingshot.text import shown, unstorable


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "This slug is taken."
    default_code = "conflict"


# Refusals because of what is there already, not of what was asked: a slug
# taken, a member already in the team, a team's last admin, a team to
# delete that is personal or still has links (teams/services.py).
CONFLICTS = {
    "slug": {"unique"},
    "username": {"member"},
    "role": {"last_admin", "personal_team"},
    "team": {"personal_team", "has_links"},
    "name": {"taken"},  # a UTM template's, in its team
}


class Unavailable(exceptions.APIException):
    """Redis, which a figure is read from, failed just now."""

    status_code = 503
    default_detail = "Temporarily unavailable; try again shortly."


def as_api_error(exc: DjangoValidationError) -> exceptions.APIException:
    """A service's ValidationError as the API answers it: 409 for a
    conflict (CONFLICTS), else 400 with a message per field."""
    detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
    for field, errors in getattr(exc, "error_dict", {}).items():
        if CONFLICTS.get(field, set()) & {error.code for error in errors}:
            return Conflict({field: detail[field]})
    return exceptions.ValidationError(detail)


def encodable(detail):
    """Error details as a response can carry them: a message or a field name
    that quotes a lone surrogate of the request (which UTF-8, and so the
    response, has no bytes for) quotes it as its escape, \\ud800."""
    if isinstance(detail, dict):
        return {encodable(key): encodable(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [encodable(item) for item in detail]
    if isinstance(detail, str) and unstorable(detail):
        return exceptions.ErrorDetail(shown(detail), code=getattr(detail, "code", None))
    return detail


def error_answer(request, status: int, detail: str, headers: dict[str, str]) -> JsonResponse:
    """An error of /api/ that no view answered (slingshot/errors.py), as the views' are."""
    return JsonResponse({"detail": detail}, status=status, headers=headers)


def exception_handler(exc, context):
    if isinstance(exc, CreationLimited):
        return Response({"detail": str(exc)}, status=429, headers=exc.headers())
    if isinstance(exc, DjangoValidationError):
        exc = as_api_error(exc)
    response = drf_exception_handler(exc, context)
    if response is not None:
        response.data = encodable(response.data)
    return response

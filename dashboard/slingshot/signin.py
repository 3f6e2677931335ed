"""Sign-in throttling with django-axes (settings/security.py, "Sign-in throttling").

Every password check goes through django.contrib.auth.authenticate, and
axes' backend refuses it, before the password is even looked at, for a
client that failed too often: the dashboard's /sign-in/, the admin's
/admin/login/ and anything else alike. Failures are counted in PostgreSQL
(axes' database handler), so throttling keeps working while Redis is away.

Two counts, each with its own limit:

- one user name from one address (SIGN_IN_FAILURE_LIMIT): someone who
  forgot their password, or a guesser aiming at one account. Failures from
  one address never lock the account out anywhere else.
- one address, whatever the user names (SIGN_IN_ADDRESS_FAILURE_LIMIT):
  a flood of guesses at many accounts. Higher, so that people behind one
  shared address do not lock each other out by a few typos.
"""

from datetime import timedelta

from axes.conf import settings
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_cool_off, get_lockout_parameters
from django import forms
from django.db.models import Sum
from django.forms.forms import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

ADDRESS_ONLY = ("ip_address",)
WARN_WHEN_LEFT = 3


def _limit(parameters: str | list[str]) -> int:
    return settings.SIGN_IN_ADDRESS_FAILURE_LIMIT if _is_address_only(parameters) else settings.AXES_FAILURE_LIMIT


class SignInAttempts(AxesDatabaseHandler):
    """axes' database handler with a limit for each of AXES_LOCKOUT_PARAMETERS.

    axes compares one number of failures with one limit (AXES_FAILURE_LIMIT),
    the largest count over the lockout parameters. Here each count is first
    shifted by the difference between its own limit and AXES_FAILURE_LIMIT,
    so that the client is locked out as soon as any one count reaches its
    own limit."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        return settings.AXES_FAILURE_LIMIT - nearest_lockout(request, credentials)[0]


def nearest_lockout(request, credentials: dict | None = None) -> tuple[int, bool]:
    """The failures left before this client is locked out (0 or less: it
    is), and whether that is by its address alone, whatever the user name,
    rather than by the user name from its address."""
    counted = zip(
        get_lockout_parameters(request, credentials),
        AxesDatabaseHandler().get_user_attempts(request, credentials),
        strict=True,
    )
    nearest = (settings.AXES_FAILURE_LIMIT, False)
    for parameters, attempts in counted:
        failures = attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
        nearest = min(nearest, (_limit(parameters) - failures, _is_address_only(parameters)))
    return nearest


def _is_address_only(parameters: str | list[str]) -> bool:
    return ((parameters,) if isinstance(parameters, str) else tuple(parameters)) == ADDRESS_ONLY


def _minutes(cool_off: timedelta | None) -> str:
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    return f"{minutes} minute{'s' if minutes != 1 else ''}" if minutes else "a while"


def lockout_message(cool_off: timedelta | None, *, address_only: bool = False) -> str:
    wait = _minutes(cool_off)
    if address_only:
        return f"Too many failed sign-ins from your address, whatever the user name: try again in {wait}."
    return (
        f"Too many failed sign-ins from your address with this user name: try again in {wait}. "
        "Until then it cannot sign in from this address; from any other, it can."
    )


def failures_left_warning(request, credentials: dict | None = None) -> str | None:
    """After a failed sign-in, a warning when few failures are left before
    a lockout (WARN_WHEN_LEFT or fewer); None otherwise."""
    left, address_only = nearest_lockout(request, credentials)
    if not 0 < left <= WARN_WHEN_LEFT:
        return None
    tries = f"{left} more failed sign-in{'s' if left != 1 else ''}"
    wait = _minutes(settings.AXES_COOLOFF_TIME)
    if address_only:
        return f"{tries} from your address, whatever the user name, and it must wait {wait}."
    return f"{tries} with this user name from your address, and it must wait {wait} to sign in from here."


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """What a locked-out client gets (AXES_LOCKOUT_CALLABLE): the sign-in
    page it used, the dashboard's or the admin's, with the lockout in place
    of the form's own error, as 429 Too Many Requests with a Retry-After."""
    cool_off = get_cool_off(request)
    message = lockout_message(cool_off, address_only=nearest_lockout(request, credentials)[1])
    context = getattr(original_response, "context_data", None) or {}
    form = context.get("form")
    if isinstance(original_response, TemplateResponse) and isinstance(form, forms.Form):
        form.errors[NON_FIELD_ERRORS] = form.error_class([message], error_class="nonfield")
        response = TemplateResponse(
            request, original_response.template_name, context, status=settings.AXES_HTTP_RESPONSE_CODE
        ).render()
    else:
        response = HttpResponse(
            message, status=settings.AXES_HTTP_RESPONSE_CODE, content_type="text/plain; charset=utf-8"
        )
    if cool_off:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response

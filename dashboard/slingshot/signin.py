"""Sign-in throttling with django-axes (settings.py, "Sign-in throttling").

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


def _limit(parameters: str | list[str]) -> int:
    names = (parameters,) if isinstance(parameters, str) else tuple(parameters)
    return settings.SIGN_IN_ADDRESS_FAILURE_LIMIT if names == ADDRESS_ONLY else settings.AXES_FAILURE_LIMIT


class SignInAttempts(AxesDatabaseHandler):
    """axes' database handler with a limit for each of AXES_LOCKOUT_PARAMETERS.

    axes compares one number of failures with one limit (AXES_FAILURE_LIMIT),
    the largest count over the lockout parameters. Here each count is first
    shifted by the difference between its own limit and AXES_FAILURE_LIMIT,
    so that the client is locked out as soon as any one count reaches its
    own limit."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        counted = zip(
            get_lockout_parameters(request, credentials), self.get_user_attempts(request, credentials), strict=True
        )
        worst = 0
        for parameters, attempts in counted:
            failures = attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
            worst = max(worst, failures - _limit(parameters) + settings.AXES_FAILURE_LIMIT)
        return worst


def lockout_message(cool_off: timedelta | None) -> str:
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    wait = f"in {minutes} minute{'s' if minutes != 1 else ''}" if minutes else "later"
    return f"Too many failed sign-ins from your address. Try again {wait}."


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """What a locked-out client gets (AXES_LOCKOUT_CALLABLE): the sign-in
    page it used, the dashboard's or the admin's, with the lockout in place
    of the form's own error, as 429 Too Many Requests with a Retry-After."""
    cool_off = get_cool_off(request)
    message = lockout_message(cool_off)
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

"""Two-factor on the dashboard (accounts/second_factor.py, accounts/passkeys.py):
the step after a right password for a person with a second factor, a
passkey's sign-in of its own, and the person's page that sets them up.

Every way in here is throttled: a wrong code counts as a failed sign-in of
its person (django-axes, as a wrong password does), and a passkey's
ceremonies as often as PASSKEY_THROTTLE_RATE per address."""

import json
import time
from base64 import b32encode

import segno
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, user_login_failed
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from accounts import passkeys, second_factor
from accounts.backends import password_sign_in_open_to
from accounts.models import Passkey
from slingshot import signin
from slingshot.proxies import client_address
from slingshot.throttle import address_caller, admit

from .sso_views import safe_next

BACKEND = "django.contrib.auth.backends.ModelBackend"
WRONG_CODE = "That code is not right. (After a wrong one the app's codes wait a few seconds: type the next it shows.)"


def _asking(request):
    """Who is asked for a second factor: the person whose password was
    right a moment ago (and what waits for them), or the signed-in person
    whose session has none yet. (None, None) when no one is."""
    pending = request.session.get(second_factor.PENDING)
    if pending:
        if time.time() - pending.get("at", 0) <= second_factor.PENDING_SECONDS:
            user = get_user_model().objects.filter(pk=pending["user"], is_active=True).first()
            if user is not None:
                return pending, user
        request.session.pop(second_factor.PENDING, None)
    if request.user.is_authenticated and second_factor.has_second_factor(request.user):
        return None, request.user
    return None, None


def _done(request, user, pending, how: str, target: str | None = None) -> str:
    """Signs `user` in (or marks the session as having given a second
    factor): where to go next, the page that asked for it (`target`, else
    ?next=) or what waited behind the password."""
    if pending is not None:
        second_factor.sign_in(request, user, backend=pending["backend"], how=how)
        return safe_next(request, pending.get("next"))
    second_factor.mark_strong(request)
    return safe_next(request, target or request.GET.get("next"))


def _locked_out(request, credentials: dict) -> str | None:
    if AxesProxyHandler.is_allowed(request, credentials):
        return None
    return signin.lockout_message(get_cool_off(request), address_only=signin.nearest_lockout(request, credentials)[1])


def _failed(request, credentials: dict, error: str) -> str:
    user_login_failed.send(sender=__name__, credentials=credentials, request=request)
    warning = signin.failures_left_warning(request, credentials)
    return f"{error} {warning}" if warning else error


@require_http_methods(["GET", "POST"])
def second_factor_page(request):
    pending, user = _asking(request)
    if user is None:
        if request.user.is_authenticated:
            return redirect("web:two-factor")
        messages.error(request, "That took too long: sign in again.")
        return redirect("web:sign-in")
    credentials = {"username": user.get_username()}
    error, status = None, 200
    if request.method == "POST":
        if locked := _locked_out(request, credentials):
            error, status = locked, 429
        elif how := second_factor.verify_code(user=user, code=request.POST.get("code", "")):
            target = _done(request, user, pending, second_factor.SECOND_FACTOR)
            if how == second_factor.RECOVERY_DEVICE:
                left = second_factor.recovery_codes_left(user)
                messages.warning(
                    request, f"You used a recovery code: {left} left. Make new ones on your Two-factor page."
                )
            return redirect(target)
        else:
            error, status = _failed(request, credentials, WRONG_CODE), 400
    context = {
        "asked": user,
        "has_app": second_factor.totp_of(user) is not None,
        "has_passkeys": Passkey.objects.filter(user=user).exists(),
        "error": error,
        "signing_in": pending is not None,
    }
    return render(request, "web/second_factor.html", context, status=status)


def _throttled_json(request):
    admitted, retry_after = admit(
        "passkey-" + address_caller(client_address(request)), rate=settings.PASSKEY_THROTTLE_RATE
    )
    if admitted:
        return None
    response = JsonResponse({"error": "Too many tries from your address: wait a minute."}, status=429)
    response["Retry-After"] = str(int(retry_after) + 1)
    return response


def _json_body(request) -> dict | None:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


@require_POST
def passkey_options(request):
    """The options of a passkey sign-in: as the second factor of the person
    asked for one, or on its own (any passkey of this site)."""
    if refused := _throttled_json(request):
        return refused
    _, user = _asking(request)
    return HttpResponse(passkeys.authentication_options(request, user), content_type="application/json")


@require_POST
def passkey_sign_in(request):
    if refused := _throttled_json(request):
        return refused
    body = _json_body(request)
    if body is None or not isinstance(body.get("credential"), dict):
        return JsonResponse({"error": 'Send the passkey\'s answer as {"credential": {...}}.'}, status=400)
    pending, user = _asking(request)
    credentials = {"username": user.get_username()} if user is not None else None
    if credentials and (locked := _locked_out(request, credentials)):
        return JsonResponse({"error": locked}, status=429)
    try:
        passkey = passkeys.authenticate(request, credential=body["credential"], user=user)
    except passkeys.PasskeyRefused as exc:
        error = _failed(request, credentials, str(exc)) if credentials else str(exc)
        return JsonResponse({"error": error}, status=400)
    if user is not None:
        return JsonResponse({"next": _done(request, user, pending, second_factor.PASSKEY, body.get("next"))})
    user = passkey.user
    if not user.is_active:
        return JsonResponse({"error": "Your account here is deactivated: ask an admin."}, status=403)
    if not password_sign_in_open_to(user.get_username()) or (not settings.LOCAL_SIGNIN and not user.is_superuser):
        return JsonResponse(
            {"error": f"Sign-in here is through {settings.OIDC_NAME}: a passkey does not open it."}, status=403
        )
    second_factor.sign_in(request, user, backend=BACKEND, how=second_factor.PASSKEY)
    return JsonResponse({"next": safe_next(request, body.get("next"))})


# --- the person's own page ---------------------------------------------------------


def _totp_setup(request, device) -> dict:
    uri = device.config_url
    return {
        "qr": segno.make(uri, error="m").svg_inline(scale=4, dark="#111", light="#fff"),
        "secret": _grouped(_base32(device.bin_key)),
        "uri": uri,
    }


def _base32(key: bytes) -> str:
    return b32encode(key).decode().rstrip("=")


def _grouped(text: str) -> str:
    return " ".join(text[i : i + 4] for i in range(0, len(text), 4))


def _two_factor_page(request, *, codes: list[str] | None = None, error: str | None = None, status: int = 200):
    user = request.user
    pending = second_factor.totp_pending(user=user)
    context = {
        "app": second_factor.totp_of(user),
        "setup": _totp_setup(request, pending) if pending else None,
        "codes": codes,
        "codes_left": second_factor.recovery_codes_left(user),
        "passkeys": Passkey.objects.filter(user=user),
        "required_by": second_factor.teams_requiring(user),
        "strong": second_factor.session_is_strong(request),
        "has_factor": second_factor.has_second_factor(user),
        "error": error,
    }
    return render(request, "web/two_factor.html", context, status=status)


def _give_it_again(request, *, json: bool = False):
    message = "Give your second factor again to change your second factors."
    target = f"{reverse('web:second-factor')}?next={reverse('web:two-factor')}"
    if json:
        return JsonResponse({"error": message, "next": target}, status=403)
    messages.info(request, message)
    return redirect(target)


@login_required
@require_http_methods(["GET", "POST"])
def two_factor(request):
    """Set up, replace or remove the authenticator app; make new recovery codes; remove a passkey."""
    if request.method == "GET":
        return _two_factor_page(request)
    user, action = request.user, request.POST.get("action", "")
    if action != "app-confirm" and not second_factor.may_change_factors(request):
        return _give_it_again(request)
    if action == "app-begin":
        second_factor.totp_begin(user=user)
    elif action == "app-confirm":
        if not second_factor.totp_confirm(user=user, code=request.POST.get("code", "")):
            return _two_factor_page(
                request, error="That code is not right: type the one the app shows now.", status=400
            )
        second_factor.mark_strong(request)
        messages.success(request, "Your authenticator app is set up: it is asked for after your password.")
        if not second_factor.recovery_codes_left(user):
            return _two_factor_page(request, codes=second_factor.recovery_codes_make(user=user))
    elif action == "app-remove":
        second_factor.totp_remove(user=user)
        messages.success(request, "The authenticator app is removed.")
    elif action == "codes":
        return _two_factor_page(request, codes=second_factor.recovery_codes_make(user=user))
    elif action == "passkey-remove":
        get_object_or_404(Passkey, pk=request.POST.get("passkey") or 0, user=user).delete()
        messages.success(request, "The passkey is removed.")
    else:
        return _two_factor_page(request, error="Nothing to do: choose one of the page's buttons.", status=400)
    return redirect("web:two-factor")


@login_required
@require_POST
def passkey_register_options(request):
    if refused := _throttled_json(request):
        return refused
    if not second_factor.may_change_factors(request):
        return _give_it_again(request, json=True)
    return HttpResponse(passkeys.registration_options(request, request.user), content_type="application/json")


@login_required
@require_POST
def passkey_register(request):
    if refused := _throttled_json(request):
        return refused
    body = _json_body(request)
    if body is None or not isinstance(body.get("credential"), dict):
        return JsonResponse({"error": 'Send the passkey as {"credential": {...}, "name": "..."}.'}, status=400)
    if not second_factor.may_change_factors(request):
        return _give_it_again(request, json=True)
    try:
        passkey = passkeys.register(
            request, request.user, credential=body["credential"], name=str(body.get("name") or "")
        )
    except passkeys.PasskeyRefused as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    second_factor.mark_strong(request)
    messages.success(request, f"The passkey “{passkey.name}” is added.")
    return JsonResponse({"next": reverse("web:two-factor")})

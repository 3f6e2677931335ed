"""Signing in through the company's OpenID provider (accounts/sso.py): the
way there, the way back, and linking a local account with the same
verified e-mail, which takes its password. Django's own sign-in page
(account_views.SignInView) shows the way in, or why it is closed."""

import time
from dataclasses import asdict

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import authenticate, get_user_model, logout
from django.contrib.auth import views as auth_views
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from accounts import second_factor, sso
from scim import selectors as scim_selectors
from slingshot import signin
from slingshot.proxies import client_address
from slingshot.throttle import address_caller, admit
from teams.groups import follow_groups

# Session keys: where to go once signed in, the ID token (for the provider's
# sign-out), and a person waiting to link their local account...
NEXT = "sso_next"
ID_TOKEN = "sso_id_token"
LINKING = "sso_linking"
# ...for at most this many seconds after the provider named them; when the
# provider last said the session's person may still come (OIDC_RECHECK_MINUTES),
# and a check under way (the page to go back to).
LINKING_SECONDS = 600
CHECKED = "sso_checked_at"
CHECKING = "sso_checking"
BACKEND = "django.contrib.auth.backends.ModelBackend"


def _enabled_or_404() -> None:
    if not sso.enabled():
        raise Http404("Single sign-on is not set up here.")


def safe_next(request, target) -> str:
    """Where to go once signed in: `target` if it is a page of this host, else the overview."""
    if (
        isinstance(target, str)
        and target
        and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure())
    ):
        return target
    return reverse("web:overview")


def _refused(request, message: str):
    messages.error(request, message)
    return redirect("web:sign-in")


def _sign_in(request, user, claims: sso.Claims, id_token: str | None):
    if not user.is_active:
        return _refused(request, "Your account here is deactivated: ask an admin.")
    # The groups the provider names now, and those its SCIM client gave (one provider, two ways).
    follow_groups(user=user, groups=sorted({*claims.groups, *scim_selectors.groups_of(user)}))
    target = request.session.pop(NEXT, None)
    second_factor.sign_in(request, user, backend=BACKEND, how=second_factor.SSO)
    if id_token:
        request.session[ID_TOKEN] = id_token
    request.session[CHECKED] = time.time()
    return redirect(safe_next(request, target))


def signed_in_with_sso(request) -> bool:
    """Whether the session came from the provider: said so at its sign-in,
    or holding the provider's ID token (a session of before that was said)."""
    return request.session.get(second_factor.SIGNED_IN_WITH) == second_factor.SSO or ID_TOKEN in request.session


def check_due(request) -> bool:
    """Whether this session of single sign-on is due to ask the provider again."""
    minutes = settings.OIDC_RECHECK_MINUTES
    return bool(
        minutes
        and sso.enabled()
        and signed_in_with_sso(request)
        and time.time() - request.session.get(CHECKED, 0) > minutes * 60
    )


def sso_check(request):
    """Asks the provider, without a page of its own (prompt=none), whether
    the session's person may still come; the answer comes to sso_done."""
    _enabled_or_404()
    if not request.user.is_authenticated:
        return redirect("web:sign-in")
    if refused := _throttled(request):
        return refused
    request.session[CHECKING] = safe_next(request, request.GET.get("next"))
    try:
        return sso.begin(
            request,
            request.build_absolute_uri(reverse("web:sso-done")),
            silent=True,
            id_token_hint=request.session.get(ID_TOKEN),
        )
    except sso.SignInRefused:  # the provider away: the dashboard goes on without it, and asks later
        request.session[CHECKED] = time.time()
        return redirect(request.session.pop(CHECKING))


def _checked(request, target: str):
    """The provider's answer to sso_check: the session goes on, ends, or
    (the provider refusing its person) its person is deactivated here."""
    user = request.user
    try:
        claims, id_token = sso.finish(request)
    except sso.SignInRefused as exc:
        if exc.error == sso.UNREACHABLE:
            request.session[CHECKED] = time.time()
            return redirect(target)
        if exc.error == "access_denied" and user.is_authenticated:
            sso.refused_by_provider(user)
            logout(request)
            return _refused(request, f"{settings.OIDC_NAME} refused you: your account here is deactivated.")
        logout(request)
        return _refused(request, f"Your session at {settings.OIDC_NAME} has ended: sign in again.")
    identity = sso.identity_of(claims)
    if not user.is_authenticated or identity is None or identity.user_id != user.pk:
        logout(request)
        return _refused(request, f"{settings.OIDC_NAME} now names someone else: sign in again.")
    follow_groups(user=user, groups=sorted({*claims.groups, *scim_selectors.groups_of(user)}))
    if id_token:
        request.session[ID_TOKEN] = id_token
    request.session[CHECKED] = time.time()
    return redirect(target)


def _throttled(request):
    """A 429 page when the address has taken OIDC_THROTTLE_RATE's ways to and from the provider."""
    admitted, retry_after = admit("sso-" + address_caller(client_address(request)), rate=settings.OIDC_THROTTLE_RATE)
    if admitted:
        return None
    response = render(request, "web/sso_throttled.html", {"seconds": int(retry_after) + 1}, status=429)
    response["Retry-After"] = str(int(retry_after) + 1)
    return response


def sso_begin(request):
    _enabled_or_404()
    if refused := _throttled(request):
        return refused
    request.session[NEXT] = safe_next(request, request.GET.get("next"))
    try:
        return sso.begin(request, request.build_absolute_uri(reverse("web:sso-done")))
    except sso.SignInRefused as exc:
        return _refused(request, str(exc))


def sso_done(request):
    _enabled_or_404()
    if refused := _throttled(request):
        return refused
    if checking := request.session.pop(CHECKING, None):
        return _checked(request, checking)
    try:
        claims, id_token = sso.finish(request)
    except sso.SignInRefused as exc:
        return _refused(request, str(exc))
    first_time = sso.identity_of(claims) is None
    if first_time and (
        provisioned := scim_selectors.provisioned_user_for(subject=claims.subject, username=claims.username)
    ):
        sso.link(claims=claims, user=provisioned)  # person_for finds them by it now
    elif first_time and (account := sso.local_account_for(claims)) is not None:
        request.session[LINKING] = {
            "claims": asdict(claims),
            "user": account.pk,
            "id_token": id_token,
            "at": time.time(),
        }
        return redirect("web:sso-link")
    try:
        user = sso.person_for(claims)
    except sso.SignInRefused as exc:
        return _refused(request, str(exc))
    return _sign_in(request, user, claims, id_token)


@require_http_methods(["GET", "POST"])
def sso_link(request):
    """A person the provider names for the first time, with the verified
    e-mail of a local account: they link it by its password, or make an
    account of their own beside it."""
    _enabled_or_404()
    waiting = request.session.get(LINKING)
    if not waiting:
        return redirect("web:sign-in")
    if time.time() - waiting.get("at", 0) > LINKING_SECONDS:
        del request.session[LINKING]
        return _refused(request, f"That took too long: sign in with {settings.OIDC_NAME} again.")
    claims = sso.Claims(**{**waiting["claims"], "groups": tuple(waiting["claims"]["groups"])})
    account = get_user_model().objects.filter(pk=waiting["user"]).first()
    error = None
    if request.method == "POST" and account is not None:
        if request.POST.get("choice") == "separate":
            del request.session[LINKING]
            return _sign_in(request, sso.person_for(claims), claims, waiting["id_token"])
        user = authenticate(
            request, username=account.username, password=request.POST.get("password", ""), sso_link=True
        )
        if user is not None and user.pk == account.pk:
            del request.session[LINKING]
            sso.link(claims=claims, user=user)
            return _sign_in(request, user, claims, waiting["id_token"])
        error = "That is not the password of this account."
        warning = signin.failures_left_warning(request, {"username": account.username})
        if getattr(request, "axes_locked_out", False):
            error = "Too many failed sign-ins: try again later."
        elif warning:
            error = f"{error} {warning}"
    return render(
        request,
        "web/sso_link.html",
        {"account": account, "email": claims.email, "provider": settings.OIDC_NAME, "error": error},
    )


class SignOutView(auth_views.LogoutView):
    """Django's sign-out, then the provider's where the session came from it
    and the provider offers RP-initiated logout (its end_session_endpoint)."""

    def post(self, request, *args, **kwargs):
        id_token = request.session.get(ID_TOKEN)
        response = super().post(request, *args, **kwargs)
        if not (id_token and sso.enabled()):
            return response
        try:
            if not sso.client().load_server_metadata().get("end_session_endpoint"):
                return response
            return sso.client().logout_redirect(
                request,
                post_logout_redirect_uri=request.build_absolute_uri(reverse("web:sign-in")),
                id_token_hint=id_token,
            )
        except Exception:  # the provider away: signed out here all the same
            return response

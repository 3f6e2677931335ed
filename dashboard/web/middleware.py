"""What the pages need of the signed-in person before any page: their
time zone (web.Preferences), a password of their own in place of one
Slingshot generated (accounts.models.GeneratedPassword), and a second
factor where a team of theirs requires one."""

from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone

from accounts import second_factor
from accounts.selectors import password_change_due
from clicks.calendar import zone_named
from teams.selectors import memberships_of

from .models import Preferences
from .teams import memberships

# The zone's name rides in the session: put there at sign-in and when it
# changes, so a page costs no query for it. Empty: not chosen yet.
SESSION_KEY = "time_zone"


def remember_time_zone(request, name: str | None = None, *, user=None) -> str:
    """Puts the person's zone (or `name`) in their session; returns it."""
    if name is None:
        user = user or request.user
        name = Preferences.objects.filter(user=user).values_list("time_zone", flat=True).first() or ""
    request.session[SESSION_KEY] = name
    return name


# Set at sign-in while the person's password is one Slingshot generated.
PASSWORD_DUE_KEY = "password_change_due"


@receiver(user_logged_in)
def _signed_in(sender, request, user, **kwargs):
    if request is not None and hasattr(request, "session"):
        remember_time_zone(request, user=user)
        if password_change_due(user):
            request.session[PASSWORD_DUE_KEY] = True


class TimeZoneMiddleware:
    """Activates the person's zone for a page: templates and forms show and
    read times in it, and reports make their days in it. Not for the API,
    whose times are UTC for a session as for a token."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            return self.get_response(request)
        name = request.session.get(SESSION_KEY)
        if name is None and request.user.is_authenticated:  # a session from before sign-in kept it
            name = remember_time_zone(request)
        # base.html then asks the browser for its zone (app.js guessTimeZone).
        request.time_zone_unset = request.user.is_authenticated and not name
        try:
            timezone.activate(zone_named(name)) if name else timezone.deactivate()
        except ValueError:  # a zone the system's tz database no longer has
            timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


class PasswordChangeDueMiddleware:
    """Sends a person whose password Slingshot generated (the first admin of
    `make run`) to the password page from any page, the admin's included,
    until they have chosen their own (web.account_views.PasswordChangeView
    takes the mark away). The API, with its tokens, is left alone."""

    ALLOWED = ("web:password-change", "web:sign-out")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (
            request.session.get(PASSWORD_DUE_KEY)
            and not request.path.startswith(("/api/", "/static/"))
            and request.path not in [reverse(name) for name in self.ALLOWED]
        ):
            messages.info(request, "Choose a password of your own: the one you signed in with was shown once.")
            return redirect("web:password-change")
        return self.get_response(request)


class _SignedInPages:
    """A middleware that may send a signed-in person's page elsewhere first
    (`send`, in process_view): the dashboard's pages and the admin's only."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if match is None or match.namespace not in ("web", "admin") or not request.user.is_authenticated:
            return None
        return self.send(request, match)

    def send(self, request, match):
        raise NotImplementedError


def _and_back(name: str, request):
    """A redirect to `name`'s page, which sends the person back to this one."""
    return redirect(f"{reverse(name)}?next={quote(request.get_full_path())}")


class SecondFactorRequiredMiddleware(_SignedInPages):
    """Sends a member of a team that requires a second factor
    (Team.require_second_factor) to their Two-factor page from any page, the
    admin's included, while their session signed in with a password alone:
    there they set one up, or give the one they have. A session of single
    sign-on meets it (the provider asks its own factors). The API, with its
    tokens, is left alone, as the other doors that take a token are."""

    ALLOWED = frozenset(
        {
            "sign-in",
            "sign-out",
            "second-factor",
            "passkey-options",
            "passkey-sign-in",
            "two-factor",
            "passkey-register-options",
            "passkey-register",
            "password-change",
            "password-change-done",
            "time-zone",
        }
    )

    def send(self, request, match):
        from .sso_views import signed_in_with_sso  # here: see SsoCheckMiddleware.send

        if (
            (match.namespace == "web" and match.url_name in self.ALLOWED)
            or second_factor.session_is_strong(request)
            or signed_in_with_sso(request)
        ):
            return None
        # A page reads the memberships once, the navigation's included
        # (web/teams.py); a post may change them, and reads them after.
        mine = memberships(request) if request.method in ("GET", "HEAD") else memberships_of(request.user)
        teams = sorted(m.team.name for m in mine if m.team.require_second_factor)
        if not teams:
            return None
        named = ", ".join(teams[:3]) + (" and more" if len(teams) > 3 else "")
        if second_factor.has_second_factor(request.user):
            messages.info(request, f"{named} asks for your second factor: give it to go on.")
            return _and_back("web:second-factor", request)
        messages.info(request, f"{named} requires a second factor: set one up to go on.")
        return redirect("web:two-factor")


class SsoCheckMiddleware(_SignedInPages):
    """Every OIDC_RECHECK_MINUTES, a page that a session of single sign-on
    opens goes by the provider first (web.sso_views.sso_check, prompt=none):
    a person the provider no longer lets in is signed out, or deactivated
    if it refuses them, and their groups are followed again. Only a page
    opened in the browser: fetches and the API are left alone."""

    def send(self, request, match):
        # Imported here, not at the top: every process loads this module for
        # its sign-in receiver (apps.py), and the SSO views' OAuth client
        # (authlib, requests) only the dashboard's.
        from .sso_views import check_due

        if (
            request.method != "GET"
            or (match.url_name or "").startswith(("sso-", "sign-"))
            or request.headers.get("Sec-Fetch-Mode", "navigate") != "navigate"
            or "text/html" not in request.headers.get("Accept", "text/html")
            or not check_due(request)
        ):
            return None
        return _and_back("web:sso-check", request)

"""What the pages need of the signed-in person before any page: their
time zone (web.Preferences), and a password of their own in place of one
Slingshot generated (accounts.models.GeneratedPassword)."""

from django.contrib import messages
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone

from accounts.selectors import password_change_due
from clicks.calendar import zone_named

from .models import Preferences

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

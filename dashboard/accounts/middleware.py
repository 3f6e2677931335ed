import time

from django.contrib.auth import SESSION_KEY
from django.utils import timezone

from .models import SessionUse

SEEN_KEY = "_slingshot_seen"
RESOLUTION_SECONDS = 60


def record_use(request, user) -> None:
    """Records the session's use now, in one statement, and when in the
    session itself, so that the next minute's requests cost nothing."""
    SessionUse.objects.bulk_create(
        [
            SessionUse(
                session_key=request.session.session_key,
                user=user,
                user_agent=request.headers.get("User-Agent", "")[:200],
                last_used_at=timezone.now(),
            )
        ],
        update_conflicts=True,
        unique_fields=["session_key"],
        update_fields=["user", "user_agent", "last_used_at"],
    )
    request.session[SEEN_KEY] = time.time()


def record_sign_in(sender, request, user, **kwargs):
    """user_logged_in: a session is used from the moment it is signed in."""
    if request is not None and getattr(request, "session", None) is not None and request.session.session_key:
        record_use(request, user)


def forget_sign_out(sender, request, user, **kwargs):
    """user_logged_out: the session is over, and so is its record."""
    key = getattr(getattr(request, "session", None), "session_key", None)
    if key:
        SessionUse.objects.filter(session_key=key).delete()


class SessionUseMiddleware:
    """Records a signed-in session's last use (SessionUse), at most once a
    minute per session."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user = getattr(request, "user", None)
        session = getattr(request, "session", None)
        if user is None or session is None or not user.is_authenticated or not session.session_key:
            return response
        if session.get(SESSION_KEY) != str(user.pk):  # signed in with an API token, not this session
            return response
        if time.time() - session.get(SEEN_KEY, 0) >= RESOLUTION_SECONDS:
            record_use(request, user)
        return response


class SsoSignOutMiddleware:
    """With single sign-on, every page may post its sign-out form to a
    redirect to the provider's end-session page (web/sso_views.py), which
    the pages' CSP form-action ('self') would stop: the provider's origin,
    and it alone, is added to the form-action of the pages' policy. Listed
    after the CSP middleware, so that it sees the response first."""

    def __init__(self, get_response):
        # Here, not at the top: every process loads this module for the
        # sign-in receivers above (apps.py), and sso's OAuth client
        # (authlib, requests) only the dashboard's.
        from . import sso

        self.get_response = get_response
        self.provider_origin = sso.provider_origin

    def __call__(self, request):
        response = self.get_response(request)
        origin = self.provider_origin()
        if origin:
            update = dict(getattr(response, "_csp_update", None) or {})
            update["form-action"] = [*update.get("form-action", []), origin]
            response._csp_update = update
        return response

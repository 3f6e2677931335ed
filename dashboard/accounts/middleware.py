import time

from django.contrib.auth import SESSION_KEY
from django.utils import timezone

from .models import SessionUse

SEEN_KEY = "_slingshot_seen"
RESOLUTION_SECONDS = 60


class SessionUseMiddleware:
    """Records a signed-in session's last use (SessionUse), at most once a
    minute per session: the time is kept in the session itself, so a
    request within the minute costs nothing."""

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
        now = time.time()
        if now - session.get(SEEN_KEY, 0) >= RESOLUTION_SECONDS:
            SessionUse.objects.update_or_create(
                session_key=session.session_key,
                defaults={
                    "user": user,
                    "user_agent": request.headers.get("User-Agent", "")[:200],
                    "last_used_at": timezone.now(),
                },
            )
            session[SEEN_KEY] = now
        return response

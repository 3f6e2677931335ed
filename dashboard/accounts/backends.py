"""Password sign-in, everywhere it is offered (the sign-in page, Django's
admin, the YOURLS API's username and password), closed by
LOCAL_SIGNIN=false to everyone but the superusers that
LOCAL_SIGNIN_SUPERUSERS names (break-glass, for when the OpenID provider is
away). A person linking their account at their first single sign-on
proves it is theirs with its password whatever LOCAL_SIGNIN says
(`sso_link`): that signs in nobody by a password alone.

A gate before Django's ModelBackend, not a backend of its own, so that the
sessions signed in before it keep theirs (a session names its backend)."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied


def password_sign_in_open_to(username: str | None) -> bool:
    """Whether password sign-in may be tried for this name (the page asks it too)."""
    return settings.LOCAL_SIGNIN or (username or "") in settings.LOCAL_SIGNIN_SUPERUSERS


class LocalSignInGate:
    """Stops password sign-in where LOCAL_SIGNIN closes it (PermissionDenied
    stops Django's authenticate, which counts a failure for the throttle);
    otherwise lets the next backend decide. Signs in no one itself, and has
    no get_user: no session names it (and Django's force_login, which takes
    the first backend with one, passes it by)."""

    def authenticate(self, request, username=None, password=None, sso_link=False, **kwargs):
        if sso_link or settings.LOCAL_SIGNIN:
            return None
        if not password_sign_in_open_to(username):
            raise PermissionDenied("Password sign-in is turned off here.")
        if not get_user_model().objects.filter(username=username, is_superuser=True).exists():
            raise PermissionDenied("Break-glass sign-in is for superusers.")
        return None

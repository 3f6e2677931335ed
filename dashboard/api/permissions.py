from rest_framework import permissions

from links import selectors as links_selectors
from links.domains import manages_domains
from tokens.models import ApiToken


class SignedInSession(permissions.BasePermission):
    """Tokens are managed from a signed-in session: a token, even a write
    one, can neither make nor revoke tokens."""

    message = "API tokens are managed from a signed-in session (the dashboard's API tokens page), not with a token."

    def has_permission(self, request, view):
        return not isinstance(request.auth, ApiToken)


class TokenScope(permissions.BasePermission):
    """A read-only token may only read."""

    message = "This token is read-only."

    def has_permission(self, request, view):
        if isinstance(request.auth, ApiToken) and request.auth.scope != ApiToken.Scope.WRITE:
            return request.method in permissions.SAFE_METHODS
        return True


class SeesOperations(permissions.BasePermission):
    """The operations reports (accounting, orphan visits): staff and superusers."""

    message = "For staff and superusers only."

    def has_permission(self, request, view):
        return links_selectors.sees_operations(request.user)


class StaffWrites(permissions.BasePermission):
    """Everyone signed in reads; staff and superusers change (domains)."""

    message = "Only staff manage domains."

    def has_permission(self, request, view):
        if request.method in permissions.SAFE_METHODS:
            return True
        return manages_domains(request.user)

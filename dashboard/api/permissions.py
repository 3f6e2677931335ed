from rest_framework import permissions

from .models import ApiToken


class TokenScope(permissions.BasePermission):
    """A read-only token may only read."""

    message = "This token is read-only."

    def has_permission(self, request, view):
        if isinstance(request.auth, ApiToken) and request.auth.scope != ApiToken.Scope.WRITE:
            return request.method in permissions.SAFE_METHODS
        return True

import logging

import redis
from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from .models import ApiToken

log = logging.getLogger(__name__)


class TokenOrUserRateThrottle(SimpleRateThrottle):
    """One budget per token; session requests share one budget per user.
    The counters live in Redis (Django's cache); while Redis is unreachable
    requests are let through, so the API keeps working (link changes wait in
    the outbox)."""

    scope = "token_or_user"

    def get_rate(self):
        return settings.API_THROTTLE_RATE

    def get_cache_key(self, request, view):
        if isinstance(request.auth, ApiToken):
            ident = f"token-{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except redis.RedisError as exc:
            log.warning("throttle counters unavailable, request let through: %s", exc)
            return True

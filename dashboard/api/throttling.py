import logging
import time

import redis
from django.conf import settings
from rest_framework.throttling import BaseThrottle

from links.redis import get_redis

from .models import ApiToken

log = logging.getLogger(__name__)

_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """'6000/min' -> (6000, 60)."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip().lower()]


class TokenOrUserRateThrottle(BaseThrottle):
    """API_THROTTLE_RATE requests per token; session requests share one
    budget per user, anonymous ones one per address. A fixed window counted
    with one INCR in Redis, shared by every worker and cheap at any rate.
    While Redis is unreachable requests are let through, so the API keeps
    working (link changes wait in the outbox)."""

    def ident(self, request) -> str:
        if isinstance(request.auth, ApiToken):
            return f"token-{request.auth.pk}"
        if request.user and request.user.is_authenticated:
            return f"user-{request.user.pk}"
        return f"addr-{self.get_ident(request)}"

    def allow_request(self, request, view) -> bool:
        limit, period = parse_rate(settings.API_THROTTLE_RATE)
        now = time.time()
        window = int(now // period)
        self.retry_after = period - (now % period)
        key = f"slingshot:throttle:{self.ident(request)}:{period}:{window}"
        try:
            pipe = get_redis().pipeline(transaction=False)
            pipe.incr(key)
            pipe.expire(key, period + 1)
            count = pipe.execute()[0]
        except redis.RedisError as exc:
            log.warning("throttle counters unavailable, request let through: %s", exc)
            return True
        return count <= limit

    def wait(self) -> float:
        return self.retry_after

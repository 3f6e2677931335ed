import logging
import time

from django.conf import settings
from rest_framework.throttling import BaseThrottle

from slingshot.proxies import client_address
from slingshot.redis import RedisUnavailable, quick_call
from tokens.models import ApiToken

log = logging.getLogger(__name__)

_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """'6000/min' -> (6000, 60)."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip().lower()]


class TokenOrUserRateThrottle(BaseThrottle):
    """API_THROTTLE_RATE requests per token; session requests share one
    budget per user, anonymous ones one per address (the address sign-in
    throttling sees, slingshot/proxies.py). A fixed window counted with one
    INCR in Redis, shared by every worker and cheap at any rate.

    While Redis is unreachable or slow, requests are let through, so the API
    keeps working (link changes wait in the outbox): the counters go through
    slingshot.redis.quick_call, which gives up within a fraction of a second and
    then skips Redis for a few seconds."""

    def ident(self, request) -> str:
        if isinstance(request.auth, ApiToken):
            return f"token-{request.auth.pk}"
        if request.user and request.user.is_authenticated:
            return f"user-{request.user.pk}"
        return f"addr-{client_address(request)}"

    def allow_request(self, request, view) -> bool:
        limit, period = parse_rate(settings.API_THROTTLE_RATE)
        now = time.time()
        window = int(now // period)
        self.retry_after = period - (now % period)
        key = f"slingshot:throttle:{self.ident(request)}:{period}:{window}"

        def count(client) -> int:
            pipe = client.pipeline(transaction=False)
            pipe.incr(key)
            pipe.expire(key, period + 1)
            return pipe.execute()[0]

        try:
            return quick_call(count, what="API throttle") <= limit
        except RedisUnavailable as exc:
            log.debug("request let through: %s", exc)
            return True

    def wait(self) -> float:
        return self.retry_after

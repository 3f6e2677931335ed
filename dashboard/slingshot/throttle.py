"""API_THROTTLE_RATE, counted in Redis: requests per token, per signed-in
person or per address, whichever door they come in by (the REST API's
api/throttling.py, the YOURLS API's yourls_api/views.py), so that every
gunicorn worker and every door shares one budget per caller.

A fixed window counted with one INCR, cheap at any rate. While Redis is
unreachable or slow, requests are let through, so the API keeps working
(link changes wait in the outbox): the counters go through
slingshot.redis.quick_call, which gives up within a fraction of a second
and then skips Redis for a few seconds."""

import logging
import time

from django.conf import settings

from .redis import RedisUnavailable, quick_call

log = logging.getLogger(__name__)

_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """'6000/min' -> (6000, 60)."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip().lower()]


def token_caller(token_id: int) -> str:
    return f"token-{token_id}"


def user_caller(user_id: int) -> str:
    return f"user-{user_id}"


def address_caller(address: str | None) -> str:
    return f"addr-{address}"


def admit(caller: str, rate: str | None = None, cost: int = 1) -> tuple[bool, float]:
    """Counts a request of `caller` (one of the *_caller names), as `cost`
    requests: whether it is within `rate` (API_THROTTLE_RATE unless given),
    and the seconds until the window ends."""
    limit, period = parse_rate(rate or settings.API_THROTTLE_RATE)
    now = time.time()
    window = int(now // period)
    key = f"slingshot:throttle:{caller}:{period}:{window}"

    def count(client) -> int:
        pipe = client.pipeline(transaction=False)
        pipe.incrby(key, cost)
        pipe.expire(key, period + 1)
        return pipe.execute()[0]

    retry_after = period - (now % period)
    try:
        return quick_call(count, what="API throttle") <= limit, retry_after
    except RedisUnavailable as exc:
        log.debug("request let through: %s", exc)
        return True, retry_after

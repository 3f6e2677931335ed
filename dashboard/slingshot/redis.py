"""The dashboard's Redis clients, configured like the edge's (docs/contract.md).

Two of them: `get_redis` for the publisher and the importer, which wait for
Redis and retry at their own level; and, for anything a request or a scrape
waits on, `quick_call`, with short timeouts behind a small circuit breaker.

Both talk to the primary: REDIS_HOST/REDIS_PORT, or, with REDIS_SENTINELS,
whichever server the Sentinels name as REDIS_SENTINEL_MASTER's primary. A
client of the Sentinel kind asks them again on its next connection after a
failover (a dropped connection, or a READONLY reply from a demoted primary),
so no process needs a restart (docs/scale-out.md).
"""

import logging
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import TypeVar

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

log = logging.getLogger(__name__)

# No retries inside redis-py: callers retry at their own level (the outbox,
# the importer's backoff), and a request must not stall while Redis is away.
NO_RETRY = Retry(NoBackoff(), 0)

T = TypeVar("T")


def _primary(*, connect_timeout: float, timeout: float) -> redis.Redis:
    options = {
        "password": settings.REDIS_PASSWORD,
        "db": settings.REDIS_DB,
        "socket_connect_timeout": connect_timeout,
        "socket_timeout": timeout,
        "retry": NO_RETRY,
    }
    if not settings.REDIS_SENTINELS:
        return redis.Redis(host=settings.REDIS_HOST, port=settings.REDIS_PORT, **options)
    sentinels = Sentinel(
        settings.REDIS_SENTINELS,
        sentinel_kwargs={
            "password": settings.REDIS_SENTINEL_PASSWORD,
            "socket_connect_timeout": connect_timeout,
            "socket_timeout": timeout,
            "retry": NO_RETRY,
        },
    )
    return sentinels.master_for(settings.REDIS_SENTINEL_MASTER, **options)


@cache
def get_redis() -> redis.Redis:
    return _primary(connect_timeout=2, timeout=5)


@cache
def get_quick_redis() -> redis.Redis:
    """A client that gives up after REDIS_REQUEST_TIMEOUT seconds to connect
    and as long again for each reply; requests use it through `quick_call`."""
    return _primary(connect_timeout=settings.REDIS_REQUEST_TIMEOUT, timeout=settings.REDIS_REQUEST_TIMEOUT)


class RedisUnavailable(Exception):
    """Redis failed just now, or recently enough that it was not asked."""


class CircuitBreaker:
    """Skips Redis for a while after it fails, so that a hung Redis costs one
    request per process a timeout every `cooldown` seconds rather than every
    request its timeout.

    Closed (the normal state): every call goes to Redis. A failure opens it:
    for `cooldown` seconds calls fail at once with RedisUnavailable, without
    touching Redis. The first call after that is let through as a probe; its
    success closes the breaker, its failure opens it for another `cooldown`.
    The state is per process (each gunicorn worker has its own), and the
    opening and closing are logged once each, not once per request.
    """

    def __init__(self, *, cooldown: Callable[[], float], clock: Callable[[], float] = time.monotonic):
        self._cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._open_until: float | None = None  # None: closed
        self._failure = ""

    def call(self, operation: Callable[[], T], *, what: str) -> T:
        with self._lock:
            now = self._clock()
            if self._open_until is not None and now < self._open_until:
                raise RedisUnavailable(f"{what}: skipped, Redis failed {self._failure}")
            if self._open_until is not None:
                self._open_until = now + self._cooldown()  # this call is the probe; others keep skipping
        try:
            result = operation()
        except redis.RedisError as exc:
            self._opened(exc, what=what)
            raise RedisUnavailable(f"{what}: {exc.__class__.__name__}: {exc}") from exc
        self._closed()
        return result

    def reset(self) -> None:
        with self._lock:
            self._open_until = None

    @property
    def is_open(self) -> bool:
        return self._open_until is not None

    def _opened(self, exc: Exception, *, what: str) -> None:
        with self._lock:
            first = self._open_until is None
            self._open_until = self._clock() + self._cooldown()
            self._failure = f"({exc.__class__.__name__}) less than {self._cooldown():g}s ago"
        if first:
            log.warning(
                "Redis failed (%s: %s: %s); requests skip it for %gs at a time until it answers",
                what,
                exc.__class__.__name__,
                exc,
                self._cooldown(),
            )

    def _closed(self) -> None:
        with self._lock:
            was_open = self._open_until is not None
            self._open_until = None
        if was_open:
            log.warning("Redis answers again; requests use it again")


breaker = CircuitBreaker(cooldown=lambda: settings.REDIS_REQUEST_COOLDOWN)


def quick_call(operation: Callable[[redis.Redis], T], *, what: str) -> T:
    """Runs `operation` with the quick client behind the breaker. Raises
    RedisUnavailable, at once while the breaker is open, or after at most
    about twice REDIS_REQUEST_TIMEOUT when Redis fails this call."""
    return breaker.call(lambda: operation(get_quick_redis()), what=what)

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


def get_replicated_redis() -> redis.Redis:
    """The quick client, for a reply that waits for replicas as well: with
    REDIS_WAIT_REPLICAS, one whose replies may take REDIS_WAIT_TIMEOUT_MS longer."""
    if settings.REDIS_WAIT_REPLICAS <= 0:
        return get_quick_redis()
    return _waiting_for_replicas()


@cache
def _waiting_for_replicas() -> redis.Redis:
    wait = settings.REDIS_WAIT_TIMEOUT_MS / 1000
    return _primary(connect_timeout=settings.REDIS_REQUEST_TIMEOUT, timeout=settings.REDIS_REQUEST_TIMEOUT + wait)


class RedisUnavailable(Exception):
    """Redis failed just now, or recently enough that it was not asked."""


class RedisNotAtFault(redis.RedisError):
    """A call that failed with Redis up: it answered, and the answer fails
    the call (too few replicas confirmed a write within WAIT's time), or the
    caller gave up before asking (a link delivery read too long ago). However
    long the call took, the breaker does not open."""


class CircuitBreaker:
    """Skips Redis for a while after it fails slowly, so that a hung Redis
    costs one request per process a timeout every `cooldown` seconds rather
    than every request its timeout.

    Closed (the normal state): every call goes to Redis. A failure that cost
    a wait (a timeout, or `slow` seconds or more) opens it: for `cooldown`
    seconds calls fail at once with RedisUnavailable, without touching Redis.
    The first call after that is let through as a probe; its success closes
    the breaker, its failure opens it for another `cooldown`. A failure that
    cost no wait (a refused or dropped connection, a primary gone read-only)
    fails its own call and opens nothing: asking again costs as little, and
    with Sentinels the next connection goes to whichever server they name,
    so a request after a failover's promotion finds the new primary rather
    than waiting out a cooldown. Nor does a failure with Redis up, however
    long it took (an error reply; RedisNotAtFault, such as a WAIT for
    replicas that ran out just after a promotion): opening would fail every
    other call of the process, password checks too, for the cooldown. The
    state is per process (each gunicorn worker has its own), and the opening
    and closing are logged once each, not once per request.
    """

    def __init__(
        self,
        *,
        cooldown: Callable[[], float],
        slow: Callable[[], float],
        clock: Callable[[], float] = time.monotonic,
    ):
        self._cooldown = cooldown
        self._slow = slow
        self._clock = clock
        self._lock = threading.Lock()
        self._open_until: float | None = None  # None: closed
        self._failing = False  # the last call failed: its failure is logged, the next success too
        self._failure = ""

    def call(self, operation: Callable[[], T], *, what: str) -> T:
        with self._lock:
            now = self._clock()
            if self._open_until is not None and now < self._open_until:
                raise RedisUnavailable(f"{what}: skipped, Redis failed {self._failure}")
            if self._open_until is not None:
                self._open_until = now + self._cooldown()  # this call is the probe; others keep skipping
        started = self._clock()
        try:
            result = operation()
        except redis.RedisError as exc:
            self._failed(exc, what=what, waited=self._clock() - started)
            raise RedisUnavailable(f"{what}: {exc.__class__.__name__}: {exc}") from exc
        with self._lock:
            was_failing, self._failing, self._open_until = self._failing, False, None
        if was_failing:
            log.warning("Redis answers again; requests use it again")
        return result

    def reset(self) -> None:
        with self._lock:
            self._open_until, self._failing = None, False

    @property
    def is_open(self) -> bool:
        return self._open_until is not None

    def _failed(self, exc: Exception, *, what: str, waited: float) -> None:
        redis_up = isinstance(exc, (redis.ResponseError, RedisNotAtFault))
        opens = not redis_up and (isinstance(exc, redis.TimeoutError) or waited >= self._slow())
        with self._lock:
            news = not self._failing or (opens and self._open_until is None)
            self._failing = True
            if opens:
                self._open_until = self._clock() + self._cooldown()
                self._failure = f"({exc.__class__.__name__}) less than {self._cooldown():g}s ago"
            else:
                self._open_until = None
        if news:
            log.warning(
                "Redis failed (%s: %s: %s); %s",
                what,
                exc.__class__.__name__,
                exc,
                f"requests skip it for {self._cooldown():g}s at a time until it answers"
                if opens
                else "at once, so requests go on asking it",
            )


breaker = CircuitBreaker(
    cooldown=lambda: settings.REDIS_REQUEST_COOLDOWN, slow=lambda: settings.REDIS_REQUEST_TIMEOUT / 2
)


def quick_call(operation: Callable[[redis.Redis], T], *, what: str, replicated: bool = False) -> T:
    """Runs `operation` with the quick client behind the breaker (with
    `replicated`, one whose replies may wait for replicas). Raises
    RedisUnavailable, at once while the breaker is open, or after at most
    about twice REDIS_REQUEST_TIMEOUT (and the replicas' wait) when Redis
    fails this call."""
    client = get_replicated_redis() if replicated else get_quick_redis()
    return breaker.call(lambda: operation(client), what=what)

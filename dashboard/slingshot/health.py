"""/healthz: whether this dashboard can reach what it needs, for load
balancers and container health checks. No sign-in; the answer names what
failed and how (an exception's class), never an address or a password,
and this version of Slingshot in its Slingshot-Version header."""

import logging

import redis
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse

from slingshot.redis import get_quick_redis

from .release import VERSION

log = logging.getLogger(__name__)


def problems() -> list[str]:
    """What does not answer: PostgreSQL (one query) and Redis (PING with
    the request client's short timeouts, so a hung Redis costs a fraction of
    a second). Redis is asked every time, breaker or not: this is the check
    that tells it is back."""
    found = []
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        log.warning("healthz: PostgreSQL: %s: %s", exc.__class__.__name__, exc)
        found.append(f"postgresql: {exc.__class__.__name__}")
    try:
        get_quick_redis().ping()
    except redis.RedisError as exc:
        log.warning("healthz: Redis: %s: %s", exc.__class__.__name__, exc)
        found.append(f"redis: {exc.__class__.__name__}")
    return found


def healthz(request: HttpRequest) -> HttpResponse:
    found = problems()
    response = HttpResponse(
        "".join(f"{problem}\n" for problem in found) + ("" if found else "ok\n") + f"version: {VERSION}\n",
        status=503 if found else 200,
        content_type="text/plain; charset=utf-8",
    )
    response["Cache-Control"] = "no-store"
    response["Slingshot-Version"] = VERSION
    return response

"""Failed sign-ins counted per address and per user name in Django's cache
(Redis, shared by every worker). Past WEB_SIGN_IN_ATTEMPTS failures within
WEB_SIGN_IN_WINDOW seconds, passwords are not even checked. While Redis is
unreachable sign-ins are let through, as the API's throttle does."""
import hashlib
import logging

import redis
from django.conf import settings
from django.core.cache import cache

log = logging.getLogger(__name__)


def _keys(address: str, username: str) -> list[str]:
    keys = ["sign-in:addr:" + address]
    if username:
        keys.append("sign-in:user:" + hashlib.sha256(username.lower().encode()).hexdigest())
    return keys


def sign_in_blocked(*, address: str, username: str) -> bool:
    try:
        counts = cache.get_many(_keys(address, username))
    except redis.RedisError as exc:
        log.warning("sign-in throttle unavailable, attempt let through: %s", exc)
        return False
    return any(count >= settings.WEB_SIGN_IN_ATTEMPTS for count in counts.values())


def sign_in_failed(*, address: str, username: str) -> None:
    try:
        for key in _keys(address, username):
            # add() starts the window; incr() keeps its expiry.
            if not cache.add(key, 1, timeout=settings.WEB_SIGN_IN_WINDOW):
                cache.incr(key)
    except (redis.RedisError, ValueError) as exc:  # ValueError: the key expired between add and incr
        log.warning("sign-in failure not counted: %s", exc)

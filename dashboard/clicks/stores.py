"""Where clicks wait for the importer: the click stores.

The primary store is the Redis primary (REDIS_* or REDIS_SENTINELS): the
edge writes there by default, and the dashboard's password page always
does. An edge may write to a Redis of its own instead (EDGE_CLICKS_REDIS_*),
so that it keeps every click while the primary is away or failing over;
each such store is named in CLICK_STORES and read by `import_clicks
--store NAME`, on as many hosts as wanted, all in the store's one consumer
group (docs/scale-out.md).
"""

from functools import cache

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from slingshot.redis import NO_RETRY, get_redis

from .stream import ImportLag, import_lag

PRIMARY = "primary"


def store_names() -> list[str]:
    return [PRIMARY, *settings.CLICK_STORES]


@cache
def quick_store(name: str) -> redis.Redis:
    """A client for a store besides the primary with the short timeouts of a
    request (REDIS_REQUEST_TIMEOUT), for the pages and the API; one per
    process, so its connections are kept for the next request."""
    timeout = settings.REDIS_REQUEST_TIMEOUT
    return redis.Redis.from_url(
        settings.CLICK_STORES[name], socket_connect_timeout=timeout, socket_timeout=timeout, retry=NO_RETRY
    )


def click_store(name: str = PRIMARY) -> redis.Redis:
    """A client for the named store, for the importer (it retries at its own level)."""
    if name == PRIMARY:
        return get_redis()
    try:
        url = settings.CLICK_STORES[name]
    except KeyError:
        raise ImproperlyConfigured(f"no click store {name!r}: CLICK_STORES names {', '.join(store_names())}") from None
    return redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5, retry=NO_RETRY)


def import_lag_of_every_store(*, client: redis.Redis) -> ImportLag:
    """The import lag of the primary (through `client`) and of every store of
    CLICK_STORES together: backlogs and pending entries added up, the oldest
    entry's age the largest, consumers as `store/consumer` beyond the primary."""
    total = import_lag(client=client)
    for name in settings.CLICK_STORES:
        lag = import_lag(client=quick_store(name))
        total = ImportLag(
            backlog=total.backlog + lag.backlog,
            pending=total.pending + lag.pending,
            oldest_age_seconds=max(total.oldest_age_seconds, lag.oldest_age_seconds),
            consumers={**total.consumers, **{f"{name}/{consumer}": n for consumer, n in lag.consumers.items()}},
        )
    return total

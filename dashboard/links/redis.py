"""The dashboard's Redis client, configured like the edge's (docs/contract.md)."""
from functools import cache

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

# No retries inside redis-py: callers retry at their own level (the outbox,
# the importer's backoff), and a request must not stall while Redis is away.
NO_RETRY = Retry(NoBackoff(), 0)


@cache
def get_redis() -> redis.Redis:
    return redis.Redis(
        host=settings.REDIS_HOST,
        port=settings.REDIS_PORT,
        password=settings.REDIS_PASSWORD,
        db=settings.REDIS_DB,
        socket_connect_timeout=2,
        socket_timeout=5,
        retry=NO_RETRY,
    )

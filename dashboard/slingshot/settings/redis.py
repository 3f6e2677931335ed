"""Redis, shared with the edge (docs/contract.md): the same variable names.
The one client that reads these is slingshot/redis.py."""

from django.core.exceptions import ImproperlyConfigured

from .environment import env

REDIS_HOST = env.str("REDIS_HOST", default="127.0.0.1")
REDIS_PORT = env.int("REDIS_PORT", default=6379)
REDIS_PASSWORD = env.str("REDIS_PASSWORD", default=None) or None
REDIS_DB = env.int("REDIS_DB", default=0)


def _host_ports(items: list[str], *, name: str) -> list[tuple[str, int]]:
    pairs = []
    for item in items:
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ImproperlyConfigured(f"{name}: {item!r} is not host:port")
        pairs.append((host.strip("[]"), int(port)))
    return pairs


# With Sentinels ("host:port,host:port"), the primary is whichever server they
# name for REDIS_SENTINEL_MASTER, found again after a failover; REDIS_HOST and
# REDIS_PORT are then unused by the dashboard, the publisher and the importer.
REDIS_SENTINELS = _host_ports(env.list("REDIS_SENTINELS", default=[]), name="REDIS_SENTINELS")
REDIS_SENTINEL_MASTER = env.str("REDIS_SENTINEL_MASTER", default="slingshot")
REDIS_SENTINEL_PASSWORD = env.str("REDIS_SENTINEL_PASSWORD", default=None) or None
# The publisher marks a link change delivered once this many replicas have it
# too (Redis WAIT), so that a failover to any of them cannot lose it.
REDIS_WAIT_REPLICAS = env.int("REDIS_WAIT_REPLICAS", default=0)
REDIS_WAIT_TIMEOUT_MS = env.int("REDIS_WAIT_TIMEOUT_MS", default=1000)

# What a request or a scrape asks Redis (the API throttle, the overview's
# import lag, /healthz) gives up after this many seconds to connect and as
# many for the reply; after a failure that waited, requests skip Redis for
# REDIS_REQUEST_COOLDOWN seconds (slingshot/redis.py). Nothing uses Django's
# cache, which stays its default, in each process's memory.
REDIS_REQUEST_TIMEOUT = env.float("REDIS_REQUEST_TIMEOUT", default=0.25)
REDIS_REQUEST_COOLDOWN = env.float("REDIS_REQUEST_COOLDOWN", default=5.0)

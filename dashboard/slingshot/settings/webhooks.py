"""Webhooks (webhooks/, docs/webhooks.md)."""

from .environment import env

# A webhook's URL may be http:// (not only https://).
WEBHOOKS_ALLOW_HTTP = env.bool("WEBHOOKS_ALLOW_HTTP", default=False)
# A webhook may reach a private network's or the loopback address (SSRF otherwise); for tests.
WEBHOOKS_ALLOW_PRIVATE = env.bool("WEBHOOKS_ALLOW_PRIVATE", default=False)
# The seconds one delivery may take, connect to last byte of the answer.
WEBHOOKS_TIMEOUT_SECONDS = env.float("WEBHOOKS_TIMEOUT_SECONDS", default=10.0)
# Deliveries `deliver_webhooks` has in flight at once, and at most to one webhook.
WEBHOOKS_CONCURRENCY = env.int("WEBHOOKS_CONCURRENCY", default=32)
WEBHOOKS_PER_WEBHOOK = env.int("WEBHOOKS_PER_WEBHOOK", default=8)
# Seconds a claimed message stays claimed unless its deliverer renews the claim
# (every third of it, while it holds the message): a deliverer killed while
# sending leaves its messages to another this long after.
WEBHOOKS_LEASE_SECONDS = env.float("WEBHOOKS_LEASE_SECONDS", default=60.0)
# How long delivered and given-up messages and their attempts stay in the delivery log.
WEBHOOKS_LOG_DAYS = env.int("WEBHOOKS_LOG_DAYS", default=14)

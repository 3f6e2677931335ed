"""Publishing links to Redis in the format docs/contract.md defines.

A change is written to the outbox (LinkOutbox) in the same transaction as the
change itself, with a NOTIFY. The publisher process (`manage.py
run_publisher`) wakes on it and runs `deliver_outbox`, which makes Redis
agree with PostgreSQL for each link and domain in the outbox, in order, and deletes the
rows only once Redis has taken them; while Redis is down they wait, and
nothing is lost.

With LINK_PUBLISH_INLINE (the default) the request that made a change also
delivers it right after its commit, before it answers, waiting up to
LINK_LIVE_TIMEOUT_MS for a delivery the publisher has under way: once a
create has answered, the link is in Redis, where every edge finds it. Where
that cannot be done in time (Redis away), the answer says so
(`Slingshot-Publish: pending`, links/middleware.py) and the publisher
delivers the change when Redis is back.
"""

import functools
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any

import psycopg
import redis
from django.conf import settings
from django.contrib.auth.hashers import identify_hasher
from django.core.exceptions import ValidationError
from django.db import DatabaseError, OperationalError, connection, transaction
from django.urls import reverse
from django.utils.crypto import salted_hmac

from slingshot.contract import DOMAINS_KEY, LINK_CHANGES_MAXLEN, LINK_CHANGES_STREAM, link_key, robots_key
from slingshot.redis import RedisUnavailable, get_redis, quick_call

from .fields import PUBLISHED
from .models import Domain, Link, LinkOutbox
from .validation import default_host

log = logging.getLogger(__name__)

OUTBOX_BATCH = 500
OUTBOX_CHANNEL = "slingshot_link_outbox"  # NOTIFY'd by every change
# One deliverer at a time keeps Redis writes in commit order.
_DELIVERY_LOCK = 0x51_1D_0B_0C
_PASSWORD_VERSION_SALT = "slingshot.links.password_version"

# What became of the link changes of the request (or command) running here,
# delivered after its commit (deliver_after_commit): LIVE, once Redis has
# every one; PENDING, while some wait in the outbox; None, if it made none
# or LINK_PUBLISH_INLINE is off.
LIVE, PENDING = "live", "pending"
delivery: ContextVar[str | None] = ContextVar("slingshot_link_delivery", default=None)
_RETRY_PAUSE = 0.05  # seconds between a request's tries while Redis fails it


def legacy_unlock_url() -> str:
    """What a link with a password carries for edges older than their own
    password pages, which send its visitors there: a dashboard page that
    asks them to come back in a minute, the same for every link
    (web.link_views.link_unlock_moved). Never the link's target: an older edge
    must not serve the link without its password (docs/contract.md, "Upgrading")."""
    return settings.DASHBOARD_BASE_URL.rstrip("/") + reverse("web:link-unlock-moved", args=[""])


def password_version(encoded: str) -> str | None:
    """The version of a link's password that the edge binds a pass through
    it to (docs/contract.md, "Password checks"); None without a password. An
    HMAC of the salt of the password's hash with a key of the dashboard's:
    it tells nothing of the password; each password set is hashed with a
    salt of its own, so the version changes with every password set, the
    same one set again too, and a pass taken before no longer serves; and a
    hash made again at a right password keeps its salt
    (links.unlocking.rehashed), so the pass that password gave serves on."""
    if not encoded:
        return None
    return salted_hmac(_PASSWORD_VERSION_SALT, password_salt(encoded), algorithm="sha256").hexdigest()[:32]


def password_salt(encoded: str) -> str:
    """The salt of a password's hash (the whole hash where its hasher keeps none)."""
    try:
        return identify_hasher(encoded).decode(encoded)["salt"]
    except (ValueError, KeyError, TypeError):
        return encoded


def link_payload(link: Link) -> str:
    """The value of the link's key (docs/contract.md, "Links"): its id, and
    each option the edge is told of, as links/fields.py says. A value
    refused since it was saved (a target on a domain blocklisted since, say)
    has the link published disabled: the edge answers it as unknown. A
    password never leaves PostgreSQL: the edge is only told that there is
    one, and asks the dashboard whether what a visitor typed is it."""
    payload, refused = {"id": link.pk}, []
    for option in PUBLISHED:
        value = getattr(link, option.name)
        try:
            payload[option.edge] = option.to_edge(value)
        except ValidationError as exc:
            refused.append(f"{option.name}: {'; '.join(exc.messages)}")
            payload[option.edge] = value if isinstance(value, str) else []
    if refused:
        log.warning("link %s is published disabled, refused now: %s", link.slug, " / ".join(refused))
        payload["active"] = False
    payload["password_version"] = password_version(link.password)
    payload["unlock_url"] = legacy_unlock_url() if link.password else None
    return json.dumps(payload, separators=(",", ":"))


def domain_payload(domain: Domain) -> str:
    """The value of a domain's field of slingshot:domains (docs/contract.md, "Domains")."""
    return json.dumps(
        {
            "default": domain.is_default,
            "root_url": domain.root_url or None,
            "not_found_url": domain.not_found_url or None,
            "https_redirect": domain.https_redirect,
        },
        separators=(",", ":"),
    )


# The option whose links a domain's robots.txt allows (links/fields.py).
ROBOTS_OPTION = "crawlable"


def in_robots(link: Link | Mapping[str, Any]) -> bool:
    """Whether the link (or its values, as a mapping) is allowed in its domain's robots.txt."""
    return bool(link[ROBOTS_OPTION] if isinstance(link, Mapping) else getattr(link, ROBOTS_OPTION))


def robots_txt(domain: Domain) -> str:
    """The domain's robots.txt: the links in_robots allowed, every other path not."""
    listed = Link.objects.filter(domain=domain, **{ROBOTS_OPTION: True})
    slugs = listed.order_by("slug").values_list("slug", flat=True)
    return "\n".join(["User-agent: *", *(f"Allow: /{slug}$" for slug in slugs), "Disallow: /", ""])


Key = tuple[str, str]  # (a domain's host, a slug): a link; (a host, ""): the domain itself


def redis_link_key(host: str, slug: str, default: str) -> str:
    return link_key(slug, None if host == default else host)


def publish_keys(keys: Iterable[Key], *, client: redis.Redis | None = None) -> int:
    """Makes Redis agree with PostgreSQL about these links and domains
    (write or delete), with one change notification each, in one MULTI/EXEC."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return 0
    default = default_host()
    # Only the queries the keys need, unordered: the publisher runs this for
    # every few links created, and compiling a query costs more than running it.
    slugs = {slug for _, slug in keys if slug}
    hosts = {host for host, slug in keys if not slug}
    found = Link.objects.filter(slug__in=slugs).select_related("domain").order_by() if slugs else ()
    links = {(link.domain.host, link.slug): link for link in found}
    domains = {domain.host: domain for domain in Domain.objects.filter(host__in=hosts).order_by()} if hosts else {}

    def fill(pipe) -> None:
        for host, slug in keys:
            if slug:
                key = redis_link_key(host, slug, default)
                link = links.get((host, slug))
                if link is None:
                    pipe.delete(key)
                else:
                    pipe.set(key, link_payload(link))
                change = {"slug": slug} if host == default else {"slug": slug, "domain": host}
            else:
                domain = domains.get(host)
                if domain is None:
                    pipe.hdel(DOMAINS_KEY, host)
                    pipe.delete(robots_key(host))
                else:
                    pipe.hset(DOMAINS_KEY, host, domain_payload(domain))
                    pipe.set(robots_key(host), robots_txt(domain))
                change = {"domain": host}
            pipe.xadd(LINK_CHANGES_STREAM, change, maxlen=LINK_CHANGES_MAXLEN, approximate=True)

    send_replicated(client or get_redis(), fill)
    return len(keys)


class NotReplicated(redis.RedisError):
    """Fewer replicas than REDIS_WAIT_REPLICAS confirmed a write in time."""


def send_replicated(client: redis.Redis, fill: Callable[[redis.client.Pipeline], None]) -> None:
    """Runs the commands `fill` queues in one MULTI/EXEC, in one round trip.
    With REDIS_WAIT_REPLICAS, a WAIT on the same connection follows, and
    fewer replicas than that confirming in REDIS_WAIT_TIMEOUT_MS raises:
    the caller keeps its outbox rows, and a change a failover could lose is
    sent again, to the new primary."""
    wanted = settings.REDIS_WAIT_REPLICAS
    pipe = client.pipeline(transaction=False)
    pipe.execute_command("MULTI")
    fill(pipe)
    pipe.execute_command("EXEC")
    if wanted > 0:
        pipe.execute_command("WAIT", wanted, settings.REDIS_WAIT_TIMEOUT_MS)
    replies = pipe.execute()
    exec_reply = replies[-2] if wanted > 0 else replies[-1]
    for reply in exec_reply:
        if isinstance(reply, Exception):
            raise reply
    if wanted > 0 and replies[-1] < wanted:
        raise NotReplicated(f"{replies[-1]} of {wanted} replicas confirmed link changes in time")


def _take_delivery_lock(cursor, wait_ms: int) -> bool:
    """Takes the delivery lock for the transaction: at once or not at all,
    or waiting up to `wait_ms` for the deliverer that holds it (a lock not
    had in time raises, psycopg's LockNotAvailable behind OperationalError)."""
    if not wait_ms:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_DELIVERY_LOCK])
        return cursor.fetchone()[0]
    # For this transaction only; nothing else in it waits for a lock: the
    # outbox rows are only ever touched under this one.
    cursor.execute("SELECT set_config('lock_timeout', %s, true)", [f"{wait_ms}ms"])
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_DELIVERY_LOCK])
    return True


def _lock_not_had(exc: OperationalError) -> bool:
    return isinstance(exc.__cause__, psycopg.errors.LockNotAvailable)


def deliver_outbox(*, batch: int = OUTBOX_BATCH, client: redis.Redis | None = None, wait_ms: int = 0) -> int | None:
    """Publishes the outbox in id order and empties it. Returns how many rows
    were delivered, or None if another process was delivering (and, with
    `wait_ms`, still was that many milliseconds later): when one was and
    this call got the lock after it, what that one delivered is in Redis.
    Redis errors propagate; undelivered rows stay for the next attempt."""
    delivered = 0
    while True:
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    if not _take_delivery_lock(cursor, wait_ms):
                        return None if delivered == 0 else delivered
                rows = list(LinkOutbox.objects.order_by("id").values_list("id", "host", "slug")[:batch])
                if not rows:
                    return delivered
                publish_keys(((host, slug) for _, host, slug in rows), client=client)
                LinkOutbox.objects.filter(id__lte=rows[-1][0]).delete()
                delivered += len(rows)
        except OperationalError as exc:
            if not _lock_not_had(exc):
                raise
            return None if delivered == 0 else delivered
        if len(rows) < batch:  # all there was when the call began: a later change comes with a NOTIFY of its own
            return delivered


def _deliver_with(client: redis.Redis, *, wait_ms: int) -> int | None:
    return deliver_outbox(client=client, wait_ms=wait_ms)


def deliver_after_commit() -> None:
    """Run by transaction.on_commit (links/outbox.py): publishes the outbox
    now, with the request's quick Redis client and breaker, after the
    delivery the publisher may have under way, trying again until
    LINK_LIVE_TIMEOUT_MS have passed. What could not be published stays in
    the outbox for the publisher, and `delivery` says PENDING; the change
    itself is committed either way. A PENDING answer comes only once the
    bound has passed: by then every edge that reads the same Redis has
    noticed that it cannot (edge/slingshot/linkcache.lua believes no
    unknown slug then), so none answers the new slug 404."""
    bound = settings.LINK_LIVE_TIMEOUT_MS / 1000
    deadline = time.monotonic() + bound
    while True:
        left_ms = max(1, int((deadline - time.monotonic()) * 1000))
        try:
            delivered = quick_call(
                functools.partial(_deliver_with, wait_ms=left_ms), what="link publishing", replicated=True
            )
        except (RedisUnavailable, DatabaseError) as exc:
            delivered, failure = None, exc
        else:
            failure = f"another delivery held the outbox for more than {bound * 1000:.0f} ms"
        if delivered is not None:
            if delivery.get() is None:
                delivery.set(LIVE)
            return
        if time.monotonic() >= deadline:
            log.warning("link changes wait in the outbox for the publisher: %s", failure)
            delivery.set(PENDING)
            return
        time.sleep(min(_RETRY_PAUSE, max(0.0, deadline - time.monotonic())))

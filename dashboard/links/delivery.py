"""Delivering the outbox: every link change reaches Redis this way.

A change is written to the outbox (links/outbox.py) in the same transaction
as the change itself. `deliver_outbox` makes Redis agree with PostgreSQL
for each link and domain in the outbox, one deliverer at a time (an
advisory lock), and deletes the rows only once Redis has taken them: while
Redis is down they wait, and nothing is lost. The publisher process
(`manage.py run_publisher`) runs it when woken by a NOTIFY, and polls.

With LINK_PUBLISH_INLINE (the default) the request that made a change
delivers it itself right after its commit, before it answers
(deliver_after_commit): once a create has answered, the link is in Redis,
where every edge finds it. It leaves its outbox rows to the publisher's
next poll, which finds Redis agreeing. The request and the publisher may
so deliver a change at once, in either order: Redis takes a change of a
key only if it has taken none newer of it (the outbox ids, which follow
the commits of each key's changes: publishing.py's _APPLY). Where Redis
fails the request for LINK_LIVE_TIMEOUT_MS, its answer says the change is
pending (`Slingshot-Publish`, links/middleware.py) and it wakes the
publisher, which delivers the change once Redis is back.
"""

import functools
import logging
import time
from contextvars import ContextVar
from types import SimpleNamespace
from typing import NamedTuple

import psycopg
import redis
from django.conf import settings
from django.db import DatabaseError, OperationalError, connection, transaction

from slingshot.redis import RedisUnavailable, quick_call

from .fields import PUBLISHED
from .models import Domain, Link, LinkOutbox
from .publishing import VERSION_TTL_SECONDS, publish_keys

log = logging.getLogger(__name__)

OUTBOX_BATCH = 500
OUTBOX_CHANNEL = "slingshot_link_outbox"  # NOTIFY'd by a change the request does not deliver itself
# One deliverer at a time keeps Redis writes in commit order.
_DELIVERY_LOCK = 0x51_1D_0B_0C

# What became of the link changes of the request (or command) running here,
# delivered after its commit (deliver_after_commit): LIVE, once Redis has
# every one; PENDING, while some wait in the outbox; None, if it made none
# or LINK_PUBLISH_INLINE is off.
LIVE, PENDING = "live", "pending"
delivery: ContextVar[str | None] = ContextVar("slingshot_link_delivery", default=None)
_RETRY_PAUSE = 0.05  # seconds between a request's tries while Redis fails it


@functools.cache
def _read_links():
    """The statement that takes the oldest rows of the outbox, and the links
    they name, in one round trip; and how to make a link of its columns.

    It takes the delivery lock if no one holds it (a transaction that holds
    it already takes it again), and only then deletes the rows, returning
    them with each one's link as link_payload reads it: the transaction is
    rolled back, and the rows kept, if Redis then fails. The first column
    says whether the lock was had; a row with no outbox id: nothing to
    deliver. The transaction's commit does not wait for the disk: a
    deletion PostgreSQL loses in a crash only has those rows delivered
    again, which changes nothing. Made at first use: a column's converter
    asks the connection."""
    # The published options, whether the link is flagged as listed
    # (links/flags.py), whether the staff stopped it (moderation/), and its
    # uploaded preview image (preview_images.py).
    more = ["listed", "blocked_at", "blocked", "preview_image"]
    fields = [Link._meta.get_field(name) for name in [*(option.name for option in PUBLISHED), *more]]
    converters = [field.get_db_converters(connection) for field in fields]
    columns = ", ".join(f"l.{field.column}" for field in fields)
    outbox, links, domains = LinkOutbox._meta.db_table, Link._meta.db_table, Domain._meta.db_table
    sql = (
        f"WITH lock AS (SELECT pg_try_advisory_xact_lock({_DELIVERY_LOCK}) AS held,"
        f" set_config('synchronous_commit', 'off', true)),"
        f" taken AS (DELETE FROM {outbox} WHERE id IN"
        f" (SELECT id FROM {outbox} WHERE (SELECT held FROM lock) ORDER BY id LIMIT %s)"
        f" RETURNING id, host, slug)"
        f" SELECT (SELECT held FROM lock), t.id, t.host, t.slug, l.id, {columns}"
        f" FROM (SELECT 1) one LEFT JOIN taken t ON true"
        f" LEFT JOIN {domains} d ON d.host = t.host AND t.slug <> ''"
        f" LEFT JOIN {links} l ON l.domain_id = d.id AND l.slug = t.slug"
        f" ORDER BY t.id"
    )

    def link(slug: str, link_id: int, values: tuple) -> SimpleNamespace:
        made = SimpleNamespace(pk=link_id, slug=slug)
        for field, value, convert in zip(fields, values, converters, strict=True):
            for converter in convert:
                value = converter(value, field, connection)
            setattr(made, field.name, value)
        return made

    return sql, link


def _prepared(sql: str, params: list) -> list[tuple]:
    """Runs `sql` as a statement PostgreSQL keeps planned for the
    connection: a request runs this one for each link it creates, and its
    planning cost PostgreSQL more than the rest of it."""
    connection.ensure_connection()
    # In a pipeline, the transaction's BEGIN goes in the same round trip.
    with connection.connection.pipeline(), psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        return cursor.fetchall()


def _take(cursor, batch: int, wait_ms: int) -> tuple[list, dict] | None:
    """The oldest `batch` rows of the outbox, deleted, as (id, host, slug)
    in id order, and their links; None when another deliverer holds the
    lock (and, with `wait_ms`, still held it that many milliseconds later:
    a lock not had in time raises, psycopg's LockNotAvailable behind
    OperationalError)."""
    sql, link = _read_links()
    rows = _prepared(sql, [batch])
    if not rows[0][0]:
        if not wait_ms:
            return None
        # For this transaction only; nothing else in it waits for a lock: the
        # outbox rows are only ever touched under this one.
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [f"{wait_ms}ms"])
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_DELIVERY_LOCK])
        rows = _prepared(sql, [batch])
    taken, links = [], {}
    for _, row_id, host, slug, link_id, *values in rows:
        if row_id is None:
            continue
        taken.append((row_id, host, slug))
        if link_id is not None:
            links[host, slug] = link(slug, link_id, values)
    return taken, links


def _lock_not_had(exc: OperationalError) -> bool:
    return isinstance(exc.__cause__, psycopg.errors.LockNotAvailable)


def deliver_outbox(*, batch: int = OUTBOX_BATCH, client: redis.Redis | None = None, wait_ms: int = 0) -> int | None:
    """Publishes the outbox in id order and empties it. Returns how many rows
    were delivered, or None if another process was delivering (and, with
    `wait_ms`, still was that many milliseconds later): when one was and
    this call got the lock after it, what that one delivered is in Redis.
    Redis errors propagate; undelivered rows stay for the next attempt.
    Three round trips to PostgreSQL and one to Redis: the publisher runs
    this at each poll, and a request for each edit."""
    delivered = 0
    while True:
        started = time.monotonic()
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                taken = _take(cursor, batch, wait_ms)
                if taken is None:
                    return None if delivered == 0 else delivered
                rows, links = taken
                if not rows:
                    return delivered
                # A link's change goes to Redis as of this transaction's
                # snapshot, which has every change of the link up to its
                # newest row here, and none after: its version. A request
                # delivering a change of its own may have had Redis take a
                # newer one meanwhile (deliver_after_commit).
                versions = {(host, slug): row_id for row_id, host, slug in rows if slug}
                publish_keys(
                    [(host, slug) for _, host, slug in rows],
                    client=client,
                    links=links,
                    versions=versions,
                    stale_after=started + VERSION_TTL_SECONDS / 10,
                )
                delivered += len(rows)
        except OperationalError as exc:
            if not _lock_not_had(exc):
                raise
            return None if delivered == 0 else delivered
        if len(rows) < batch:  # all there was when the call began: a later change comes with a NOTIFY of its own
            return delivered


def _wake_publisher() -> None:
    """The NOTIFY a change delivered inline did not send (links/outbox.py):
    the publisher takes over what the request could not deliver."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, '')", [OUTBOX_CHANNEL])
    except DatabaseError as exc:
        log.warning("the publisher's poll finds them: %s", exc)


_STILL_WAITING = f"SELECT EXISTS (SELECT 1 FROM {LinkOutbox._meta.db_table} WHERE id = ANY(%s))"


def _delivered_meanwhile(rows: list[int], wait_ms: int) -> bool:
    """Waits up to `wait_ms` for the deliverer under way to end (a lock
    shared with every other request waiting so, and refused to deliverers
    while held), then whether it took `rows`. One round trip: each
    statement of a transaction at READ COMMITTED sees what was committed
    before it began, so the last sees the deliverer's deletions."""
    connection.ensure_connection()
    try:
        with transaction.atomic(), connection.connection.pipeline(), psycopg.Cursor(connection.connection) as cursor:
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [f"{wait_ms}ms"])
            cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [_DELIVERY_LOCK])
            cursor.execute(_STILL_WAITING, [rows], prepare=True)
            return not cursor.fetchone()[0]
    except psycopg.errors.LockNotAvailable:
        return False


def _deliver_own(client: redis.Redis, *, rows: list[int], until: float) -> bool:
    """Delivers the outbox, or, while another deliverer holds it, waits for
    that one to end and takes it again only if `rows` are still there,
    until the monotonic time `until`; whether `rows` were delivered. The
    requests that wait so wake together when the deliverer ends, and most
    find their rows taken by it rather than each running a delivery of its
    own in turn; waiting costs no CPU while it lasts."""
    while True:
        if deliver_outbox(client=client) is not None:
            return True  # it had the lock: everything committed before it, `rows` too, is in Redis
        wait_ms = round((until - time.monotonic()) * 1000)
        if wait_ms <= 0:
            return False
        if _delivered_meanwhile(rows, wait_ms):
            return True


class Change(NamedTuple):
    """A change a transaction wrote to the outbox (links/outbox.py): its
    row, its key, and the link's value as the transaction committed it
    (link_payload's; None: no link), or UNREAD."""

    row: int
    host: str
    slug: str
    value: object


# A change whose value the transaction does not know as it commits it: an
# edit (whose row another may have changed before it locked it), a domain's.
UNREAD = object()


def _deliver_known(client: redis.Redis, *, values: dict, versions: dict) -> bool:
    """Delivers changes whose values the request knows, without the outbox:
    their rows wait for the publisher's next poll, which finds Redis
    agreeing. No lock and no round trip to PostgreSQL: Redis takes each
    change unless it has taken a newer one of its link (versions)."""
    publish_keys(list(values), client=client, links={}, values=values, versions=versions)
    return True


def deliver_after_commit(changes: list[Change]) -> None:
    """Run by transaction.on_commit (links/outbox.py) with the changes the
    transaction wrote to the outbox: publishes them now, with the request's
    quick Redis client and breaker, trying again while Redis fails it,
    until LINK_LIVE_TIMEOUT_MS have passed. The changes whose values it
    knows (a link made or deleted) it delivers itself; with any other, it
    delivers the outbox, or waits for the delivery another process has
    under way to take its rows. What could not be published stays in the
    outbox for the publisher, and `delivery` says PENDING; the change
    itself is committed either way. A PENDING answer comes only once the
    bound has passed: by then every edge that reads the same Redis has
    noticed that it cannot (edge/slingshot/linkcache.lua believes no
    unknown slug then), so none answers the new slug 404."""
    bound = settings.LINK_LIVE_TIMEOUT_MS / 1000
    deadline = time.monotonic() + bound
    values, versions = {}, {}
    for change in changes:  # in the order they were made: the last of a key is its value
        values[change.host, change.slug] = change.value
        versions[change.host, change.slug] = change.row
    if any(value is UNREAD for value in values.values()):
        deliver = functools.partial(_deliver_own, rows=[change.row for change in changes], until=deadline)
    else:
        deliver = functools.partial(_deliver_known, values=values, versions=versions)
    while True:
        try:
            live = quick_call(deliver, what="link publishing", replicated=True)
        # psycopg's own errors too: the delivery's statements run on its cursors.
        except (RedisUnavailable, DatabaseError, psycopg.Error) as exc:
            live, failure = False, exc
        else:
            failure = f"another delivery held the outbox for more than {bound * 1000:.0f} ms"
        if live:
            if delivery.get() is None:
                delivery.set(LIVE)
            return
        if time.monotonic() >= deadline:
            log.warning("link changes wait in the outbox for the publisher: %s", failure)
            delivery.set(PENDING)
            _wake_publisher()
            return
        time.sleep(min(_RETRY_PAUSE, max(0.0, deadline - time.monotonic())))

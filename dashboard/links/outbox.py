"""Writing a change to the outbox (LinkOutbox), in the caller's transaction:
the publisher delivers it to Redis once that transaction commits
(links/delivery.py)."""

import functools

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .delivery import OUTBOX_CHANNEL, UNREAD, Change, deliver_after_commit
from .models import LinkOutbox
from .publishing import link_payload

# The row and its NOTIFY (pg_notify's, which PostgreSQL sends at the commit as
# it would NOTIFY's) in one statement: one round trip per change, and no
# insert for the ORM to compile. A change the request delivers itself
# (LINK_PUBLISH_INLINE) wakes no publisher, which would find nothing to do
# but sweep it: the request sends the NOTIFY only if it could not deliver
# (links/delivery.py), and the publisher sweeps the rest on its poll.
_INSERT = f"INSERT INTO {LinkOutbox._meta.db_table} (host, slug, created_at) VALUES (%s, %s, %s) RETURNING id"
_WRITE = f"WITH row AS ({_INSERT}) SELECT pg_notify('{OUTBOX_CHANNEL}', '') FROM row"


def _deliver_once_committed(change: Change) -> None:
    """Has the caller's transaction's changes delivered once it commits,
    once however many it makes (a bulk create's thousands). Django starts a new
    list of commit callbacks at every commit and rollback, so while the
    list this delivery joined is still the connection's, it is there."""
    if connection.in_atomic_block and getattr(connection, "_slingshot_delivery_in", None) is connection.run_on_commit:
        connection._slingshot_delivery_changes.append(change)
        return
    changes = [change]
    transaction.on_commit(functools.partial(deliver_after_commit, changes))
    connection._slingshot_delivery_in, connection._slingshot_delivery_changes = connection.run_on_commit, changes


def _publish(host: str, slug: str, link) -> None:
    inline = settings.LINK_PUBLISH_INLINE
    with connection.cursor() as cursor:
        cursor.execute(_INSERT if inline else _WRITE, [host, slug, timezone.now()])
        row_id = cursor.fetchone()[0] if inline else None
    if inline:
        value = link if link is UNREAD or link is None else link_payload(link)
        _deliver_once_committed(Change(row_id, host, slug, value))


def publish_link(host: str, slug: str, link=UNREAD) -> None:
    """The link with this slug on the domain of this host changed. `link`:
    the Link it holds as the caller's transaction commits it (None: none),
    where the caller knows that, having just made or deleted it; else the
    delivery reads it once the transaction has committed."""
    _publish(host, slug, link)


def publish_domain(host: str) -> None:
    """The domain of this host changed: its settings, or the links its robots.txt lists."""
    _publish(host, "", UNREAD)

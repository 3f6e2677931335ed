"""Writing a change to the outbox (LinkOutbox), in the caller's transaction:
the publisher delivers it to Redis once that transaction commits
(links/delivery.py)."""

import functools

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .delivery import OUTBOX_CHANNEL, deliver_after_commit
from .models import LinkOutbox

# The row and its NOTIFY (pg_notify's, which PostgreSQL sends at the commit as
# it would NOTIFY's) in one statement: one round trip per change, and no
# insert for the ORM to compile. A change the request delivers itself
# (LINK_PUBLISH_INLINE) wakes no publisher, which would find nothing: the
# request sends the NOTIFY only if it could not deliver (links/delivery.py).
_INSERT = f"INSERT INTO {LinkOutbox._meta.db_table} (host, slug, created_at) VALUES (%s, %s, %s) RETURNING id"
_WRITE = f"WITH row AS ({_INSERT}) SELECT pg_notify('{OUTBOX_CHANNEL}', '') FROM row"


def _deliver_once_committed(row_id: int) -> None:
    """Has the outbox delivered once the caller's transaction commits, once
    however many changes it makes (a bulk create's thousands), telling the
    delivery which rows are its own. Django starts a new list of commit
    callbacks at every commit and rollback, so while the list this delivery
    joined is still the connection's, it is there."""
    if connection.in_atomic_block and getattr(connection, "_slingshot_delivery_in", None) is connection.run_on_commit:
        connection._slingshot_delivery_rows.append(row_id)
        return
    rows = [row_id]
    transaction.on_commit(functools.partial(deliver_after_commit, rows))
    connection._slingshot_delivery_in, connection._slingshot_delivery_rows = connection.run_on_commit, rows


def _publish(host: str, slug: str) -> None:
    inline = settings.LINK_PUBLISH_INLINE
    with connection.cursor() as cursor:
        cursor.execute(_INSERT if inline else _WRITE, [host, slug, timezone.now()])
        row_id = cursor.fetchone()[0] if inline else None
    if inline:
        _deliver_once_committed(row_id)


def publish_link(host: str, slug: str) -> None:
    """The link with this slug on the domain of this host changed."""
    _publish(host, slug)


def publish_domain(host: str) -> None:
    """The domain of this host changed: its settings, or the links its robots.txt lists."""
    _publish(host, "")

"""Writing a change to the outbox (LinkOutbox), in the caller's transaction:
the publisher delivers it to Redis once that transaction commits
(links/publishing.py)."""

from django.conf import settings
from django.db import connection, transaction

from .models import LinkOutbox
from .publishing import OUTBOX_CHANNEL, deliver_after_commit


def _publish(host: str, slug: str) -> None:
    LinkOutbox.objects.create(host=host, slug=slug)
    with connection.cursor() as cursor:
        cursor.execute(f"NOTIFY {OUTBOX_CHANNEL}")
    if settings.LINK_PUBLISH_INLINE:
        transaction.on_commit(deliver_after_commit)


def publish_link(host: str, slug: str) -> None:
    """The link with this slug on the domain of this host changed."""
    _publish(host, slug)


def publish_domain(host: str) -> None:
    """The domain of this host changed: its settings, or the links its robots.txt lists."""
    _publish(host, "")

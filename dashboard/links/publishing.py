"""Publishing links to Redis in the format docs/contract.md defines."""
import json
import logging

from .models import Link
from .redis import get_redis

log = logging.getLogger(__name__)

LINK_KEY_PREFIX = "slingshot:link:"
CHANGES_STREAM = "slingshot:link-changes"
CHANGES_MAXLEN = 100_000


def link_key(slug: str) -> str:
    return LINK_KEY_PREFIX + slug


def link_payload(link: Link) -> str:
    return json.dumps(
        {
            "url": link.url,
            "status": link.redirect_status,
            "active": link.is_active,
            "expires_at": int(link.expires_at.timestamp()) if link.expires_at else None,
            "forward_query": link.forward_query,
        },
        separators=(",", ":"),
    )


def publish_slug(slug: str) -> None:
    """Make Redis agree with PostgreSQL about one slug: write it, or delete it."""
    link = Link.objects.filter(slug=slug).first()
    pipe = get_redis().pipeline(transaction=True)
    if link is None:
        pipe.delete(link_key(slug))
    else:
        pipe.set(link_key(slug), link_payload(link))
    pipe.xadd(CHANGES_STREAM, {"slug": slug}, maxlen=CHANGES_MAXLEN, approximate=True)
    pipe.execute()


def publish_after_commit(slug: str) -> None:
    """Called from transaction.on_commit by the services."""
    try:
        publish_slug(slug)
    except Exception:
        # The change is committed in PostgreSQL; `publish_links` brings Redis back in line.
        log.exception("could not publish link %r to Redis", slug)

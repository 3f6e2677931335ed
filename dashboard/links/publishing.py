"""Publishing links to Redis in the format docs/contract.md defines.

A change is written to the outbox (LinkOutbox) in the same transaction as the
change itself, with a NOTIFY. The publisher process (`manage.py
run_publisher`) wakes on it and runs `deliver_outbox`, which makes Redis
agree with PostgreSQL for each slug in the outbox, in order, and deletes the
rows only once Redis has taken them; while Redis is down they wait, and
nothing is lost. With LINK_PUBLISH_INLINE the request that made the change
also delivers right after its commit (no publisher needed, a few ms slower).
"""

import json
import logging
import math
from collections.abc import Iterable

import redis
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.urls import reverse

from slingshot.contract import LINK_CHANGES_MAXLEN, LINK_CHANGES_STREAM, link_key

from .models import Link, LinkOutbox
from .redis import RedisUnavailable, get_redis, quick_call
from .rules import validate_rules, validate_split
from .validation import normalise_target

log = logging.getLogger(__name__)

OUTBOX_BATCH = 500
OUTBOX_CHANNEL = "slingshot_link_outbox"  # NOTIFY'd by every change
# One deliverer at a time keeps Redis writes in commit order.
_DELIVERY_LOCK = 0x51_1D_0B_0C


def _unix(moment, *, up: bool = False) -> int | None:
    """Unix seconds, rounded down, or up (a link is never live early)."""
    if moment is None:
        return None
    return math.ceil(moment.timestamp()) if up else math.floor(moment.timestamp())


def unlock_url(link: Link) -> str:
    """Where the edge sends the visitors of a link with a password: the
    dashboard's page that asks for it (web.views.link_unlock)."""
    return settings.DASHBOARD_BASE_URL.rstrip("/") + reverse("web:link-unlock", args=[link.pk])


def _rules_payload(link: Link, servable: bool) -> tuple[list, list, bool]:
    """The link's rules and split as the edge gets them, and whether the
    link stays servable: like its url, a rule whose target is refused now
    has the link published disabled."""
    try:
        return validate_rules(link.rules), validate_split(link.split), servable
    except ValidationError as exc:
        log.warning("link %s is published disabled, its rules are refused now: %s", link.slug, "; ".join(exc.messages))
        return [], [], False


def link_payload(link: Link) -> str:
    """The value of the link's key (docs/contract.md, "Links"). A target the
    rules refuse now (a domain blocklisted since, say) is published
    disabled: the edge answers it as unknown. A password never leaves
    PostgreSQL: the edge is only told where its unlock page is."""
    url, servable = link.url, True
    try:
        url = normalise_target(link.url)
    except ValidationError as exc:
        log.warning("link %s is published disabled, its target is refused now: %s", link.slug, "; ".join(exc.messages))
        servable = False
    rules, split, servable = _rules_payload(link, servable)
    return json.dumps(
        {
            "id": link.pk,
            "url": url,
            "status": link.redirect_status,
            "active": link.is_active and servable,
            "valid_since": _unix(link.valid_since, up=True),
            "expires_at": _unix(link.expires_at),
            "max_visits": link.max_visits,
            "forward_query": link.forward_query,
            "unlock_url": unlock_url(link) if link.password else None,
            "rules": rules,
            "split": split,
        },
        separators=(",", ":"),
    )


def publish_slugs(slugs: Iterable[str], *, client: redis.Redis | None = None) -> int:
    """Makes Redis agree with PostgreSQL about these slugs (write or delete),
    with one change notification each, in one MULTI/EXEC."""
    slugs = list(dict.fromkeys(slugs))
    if not slugs:
        return 0
    links = {link.slug: link for link in Link.objects.filter(slug__in=slugs)}
    pipe = (client or get_redis()).pipeline(transaction=True)
    for slug in slugs:
        link = links.get(slug)
        if link is None:
            pipe.delete(link_key(slug))
        else:
            pipe.set(link_key(slug), link_payload(link))
        pipe.xadd(LINK_CHANGES_STREAM, {"slug": slug}, maxlen=LINK_CHANGES_MAXLEN, approximate=True)
    pipe.execute()
    return len(slugs)


def deliver_outbox(*, batch: int = OUTBOX_BATCH, client: redis.Redis | None = None) -> int | None:
    """Publishes the outbox in id order and empties it. Returns how many rows
    were delivered, or None if another process is delivering right now.
    Redis errors propagate; undelivered rows stay for the next attempt."""
    delivered = 0
    while True:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_DELIVERY_LOCK])
                if not cursor.fetchone()[0]:
                    return None if delivered == 0 else delivered
            rows = list(LinkOutbox.objects.order_by("id").values_list("id", "slug")[:batch])
            if not rows:
                return delivered
            publish_slugs((slug for _, slug in rows), client=client)
            LinkOutbox.objects.filter(id__lte=rows[-1][0]).delete()
            delivered += len(rows)


def deliver_after_commit() -> None:
    """The fast path, run by transaction.on_commit: publish now if Redis
    answers at once (the request's own quick client and breaker), else leave
    the change in the outbox for the publisher."""
    try:
        quick_call(lambda client: deliver_outbox(client=client), what="link publishing")
    except RedisUnavailable as exc:
        log.warning("link changes wait in the outbox for the publisher: %s", exc)

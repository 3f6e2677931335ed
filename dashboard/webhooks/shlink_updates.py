"""Shlink's real-time updates on Redis pub/sub, for teams coming from
Shlink (its REDIS_PUB_SUB_ENABLED; docs/compatibility.md): with
SHLINK_REDIS_PUB_SUB, every visit stored is published on Shlink's topics
`https://shlink.io/new-visit` and `https://shlink.io/new-visit/<short
code>` (an orphan visit on `https://shlink.io/new-orphan-visit`), and every
new short URL on `https://shlink.io/new-short-url`, each a channel of that
name with Shlink's payload as JSON (Shlink's AsyncAPI spec,
docs/async-api/async-api.json; its PublishingUpdatesGenerator).

Published once what caused them has committed: a batch of the click
importer (clicks.signals.batch_stored), a link made (links.signals.
link_changed). As with Shlink, at most once: a subscriber that is not
listening misses them, and a Redis that fails is logged, never the
importer's or the request's error.

Its receivers are connected in every process (events.connect); what makes
the payloads (Shlink's shapes, the clicks' and links' queries, and with
them the API's and the clicks' modules) is imported when one is made."""

import logging
from collections.abc import Callable
from datetime import UTC, datetime

import orjson
import redis
from django.conf import settings
from django.db import connection, transaction

from clicks.models import Click
from links.models import Link
from slingshot.redis import get_redis

from .clicks import click_ids, click_ranges

log = logging.getLogger(__name__)

NEW_VISIT = "https://shlink.io/new-visit"
NEW_SHORT_URL_VISIT = "https://shlink.io/new-visit/{}"
NEW_ORPHAN_VISIT = "https://shlink.io/new-orphan-visit"
NEW_SHORT_URL = "https://shlink.io/new-short-url"

_ORPHANS = """
SELECT referer, occurred_at, user_agent, country, is_bot, domain, slug FROM orphan_visits
WHERE click_id = ANY(%s::uuid[]) AND occurred_at BETWEEN %s AND %s AND import_id IS NULL
ORDER BY occurred_at, click_id
"""


class _Row:
    __slots__ = ("referer", "occurred_at", "user_agent", "country", "is_bot", "domain", "slug")

    def __init__(self, values):
        for name, value in zip(self.__slots__, values, strict=True):
            setattr(self, name, value)


def _publish(updates: Callable[[], list[tuple[str, dict]]]) -> None:
    """Publishes what `updates` makes; a failure of either is logged, never
    raised into the commit it follows."""
    try:
        made = updates()
        pipe = get_redis().pipeline(transaction=False)
        for topic, payload in made:
            pipe.publish(topic, orjson.dumps(payload))
        pipe.execute()
    except redis.RedisError as exc:
        log.warning("Shlink's real-time updates not published: %s", exc)
    except Exception:
        log.exception("Shlink's real-time updates not published")


def visit_updates(ranges: list[list], first, last) -> list[tuple[str, dict]]:
    """The updates of the visits of these click ids that are stored."""
    from api.shlink.shapes import short_url
    from api.shlink.visits import orphan_visit, visit
    from clicks.selectors import with_click_totals

    ids = click_ids(ranges)
    span = {"occurred_at__gte": first, "occurred_at__lte": last}
    clicks = list(
        Click.objects.filter(click_id__in=ids, **span).extra(where=["import_id IS NULL"]).select_related("agent")
    )
    links = {
        link.pk: link
        for link in with_click_totals(Link.objects.filter(pk__in={c.link_id for c in clicks})).select_related("domain")
    }
    updates = []
    for click in sorted(clicks, key=lambda c: (c.occurred_at, c.click_id)):
        link = links.get(click.link_id)
        if link is None:
            continue
        payload = {"shortUrl": short_url(link), "visit": visit(click, link)}
        updates += [(NEW_SHORT_URL_VISIT.format(link.slug), payload), (NEW_VISIT, payload)]
    with connection.cursor() as cursor:
        cursor.execute(_ORPHANS, [ids, first, last])
        updates += [(NEW_ORPHAN_VISIT, {"visit": orphan_visit(_Row(row))}) for row in cursor.fetchall()]
    return updates


def on_batch_stored(sender, *, cursor, batch, **kwargs) -> None:
    if not settings.SHLINK_REDIS_PUB_SUB or batch.import_id is not None or not batch.size:
        return
    ranges = click_ranges(batch)
    first = _moment(batch.first_ms)
    last = _moment(batch.last_ms)
    if ranges:
        transaction.on_commit(lambda: _publish(lambda: visit_updates(ranges, first, last)))


def on_link_changed(sender, *, link, event: str, **kwargs) -> None:
    if settings.SHLINK_REDIS_PUB_SUB and event == "created":
        transaction.on_commit(lambda: _publish(lambda: [(NEW_SHORT_URL, {"shortUrl": _short_url_now(link)})]))


def _short_url_now(link: Link) -> dict:
    """Shlink's shortUrl of `link` as it is now stored, with its visits."""
    from api.shlink.shapes import short_url
    from clicks.selectors import with_click_totals

    return short_url(with_click_totals(Link.objects.filter(pk=link.pk)).select_related("domain").first() or link)


def _moment(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)

"""`link.clicked`: one message for each click stored, for each webhook of
its link's team that wants it (orphan visits and visits brought by imports
are not clicks of this server's).

In the batch's own transaction (clicks.signals.batch_stored), while any
enabled webhook wants `link.clicked` for a link of the batch, the click ids
of its stream entries go into a ClickBatch row: a few numbers an entry,
not a row a click, so that the importer stores as fast as without. The
deliverer turns each ClickBatch into messages (make_click_messages): the
clicks of those ids that are stored, joined to the webhooks that wanted
them when the batch was stored, each message's id the click's, inserted
once (a batch stored again after a crash between its COMMIT and its
acknowledgement makes a second ClickBatch, whose messages are there
already), and the ClickBatch deleted in the same transaction."""

import uuid
from datetime import UTC, datetime

import orjson
from django.db import connection, transaction

from api.times import iso
from clicks.entries import CLICK_LINES
from links.models import Link

from . import event_types as types
from .events import body, link_data

_WANTED = """
SELECT EXISTS (
    SELECT 1 FROM links_link l JOIN webhooks_webhook w ON w.team_id = l.team_id
    WHERE l.id = ANY(%s::bigint[]) AND w.enabled AND w.events @> '["link.clicked"]'
)
"""
_ADD = (
    "INSERT INTO webhooks_clickbatch (ranges, first_at, last_at, created_at) "
    "SELECT %s, to_timestamp(%s / 1000.0), to_timestamp(%s / 1000.0), now() WHERE (" + _WANTED.strip() + ")"
)


def click_ranges(batch) -> list[list]:
    """[id prefix, first number, count] of each entry of the batch that was
    not dead-lettered: its clicks' ids (docs/contract.md)."""
    dead = {entry_id for entry_id, _, _ in batch.dead}
    ranges = []
    for entry_id, fields in batch.entries:
        raw = fields.get(b"clicks") if fields else None
        per = CLICK_LINES.get(fields.get(b"v")) if fields else None
        if not raw or not per or entry_id in dead:
            continue
        end = raw.index(b"\n", 17)
        count = (raw.count(b"\n") - 2) // per
        if count > 0:
            ranges.append([raw[:16].decode(), int(raw[17:end], 16), count])
    return ranges


def on_batch_stored(sender, *, cursor, batch, **kwargs) -> None:
    if batch.import_id is not None or not batch.clicks or not batch.link_ids:
        return
    ranges = click_ranges(batch)
    if ranges:
        cursor.execute(_ADD, [orjson.dumps(ranges).decode(), batch.first_ms, batch.last_ms, sorted(batch.link_ids)])


_CLAIM = """
SELECT id, ranges, first_at, last_at, created_at FROM webhooks_clickbatch
ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED
"""
# The stored clicks of a ClickBatch's ids, with each webhook that wanted
# them: enabled now, and made before the batch was stored.
_CLICKS = """
SELECT w.id, c.link_id, c.click_id, c.occurred_at, c.slug, host(c.ip), a.user_agent, c.referer, c.referer_host,
       c.browser, c.os, c.device, c.country, c.is_bot
FROM clicks c
JOIN links_link l ON l.id = c.link_id
JOIN webhooks_webhook w ON w.team_id = l.team_id AND w.enabled AND w.events @> '["link.clicked"]'
                        AND w.created_at <= %(stored)s
JOIN user_agents a ON a.id = c.user_agent_id
WHERE c.click_id = ANY(%(ids)s::uuid[]) AND c.occurred_at BETWEEN %(first)s AND %(last)s AND c.import_id IS NULL
ORDER BY c.occurred_at, c.click_id
"""
_INSERT = """
INSERT INTO webhooks_message (webhook_id, msg_id, event_type, body, state, attempts, created_at, next_attempt_at)
SELECT w, m, 'link.clicked', b, 'pending', 0, now(), now()
FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS t(w, m, b)
ON CONFLICT (webhook_id, msg_id) DO NOTHING
"""


def click_ids(ranges: list[list]) -> list[uuid.UUID]:
    """The click ids of [id prefix, first number, count] ranges (docs/contract.md)."""
    return [
        uuid.UUID(int=(int(prefix, 16) << 64) | number)
        for prefix, first, count in ranges
        for number in range(first, first + count)
    ]


def click_msg_id(click_id) -> str:
    """A click's message id: the same for every webhook and every time it is made."""
    return f"msg_click_{click_id.hex}"


def _click(row) -> dict:
    """A click as /api/v1/clicks shows it."""
    _, _, click_id, occurred_at, slug, ip, agent, referer, referer_host, browser, os, device, country, bot = row
    return {
        "click_id": str(click_id),
        "occurred_at": iso(occurred_at),
        "slug": slug,
        "ip": ip,
        "user_agent": agent,
        "referer": referer,
        "referer_host": referer_host,
        "browser": browser,
        "os": os,
        "device": device,
        "country": country,
        "is_bot": bot,
    }


def make_click_messages(limit: int = 20) -> int:
    """Turns up to `limit` ClickBatch rows into messages, each in its own
    transaction with the row's delete; returns how many messages were new."""
    made = 0
    links: dict[int, orjson.Fragment] = {}  # a link's JSON, made once a call
    for _ in range(limit):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_CLAIM, [1])
            claimed = cursor.fetchone()
            if claimed is None:
                break
            batch_id, ranges, first_at, last_at, stored_at = claimed
            cursor.execute(
                _CLICKS,
                {
                    "ids": click_ids(orjson.loads(ranges) if isinstance(ranges, str) else ranges),
                    "first": first_at,
                    "last": last_at,
                    "stored": stored_at,
                },
            )
            rows = cursor.fetchall()
            missing = {row[1] for row in rows} - set(links)
            for link in Link.objects.filter(pk__in=missing).select_related("domain"):
                links[link.pk] = orjson.Fragment(orjson.dumps(link_data(link)["link"]))
            webhook_ids, msg_ids, bodies = [], [], []
            now = datetime.now(UTC)
            for row in rows:
                link_json = links.get(row[1])
                if link_json is None:
                    continue  # deleted meanwhile: its clicks went with it
                webhook_ids.append(row[0])
                msg_ids.append(click_msg_id(row[2]))
                bodies.append(body(types.LINK_CLICKED, {"link": link_json, "click": _click(row)}, at=now))
            if rows:
                cursor.execute(_INSERT, [webhook_ids, msg_ids, bodies])
                made += cursor.rowcount
            cursor.execute("DELETE FROM webhooks_clickbatch WHERE id = %s", [batch_id])
    return made

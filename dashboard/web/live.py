"""Clicks pushed to the pages that show them (the link page, the
overview), as server-sent events, by `manage.py serve_live`
(web/live_server.py) rather than by gunicorn, whose sync workers an open
page would each hold.

- Once the click importer's batch has committed (clicks.signals.
  batch_stored, transaction.on_commit), a Redis PUBLISH for each of its
  links (`slingshot:live:link:<id>`, with the link's all-time clicks and
  human clicks as JSON, which the page shows at once), each member of
  their teams (`slingshot:live:user:<id>`, for the overview) and everyone
  (`slingshot:live:all`, a superuser's overview);
  the page then fetches the rest of what changed (its report), at most
  every REFRESH seconds of app.js, so that a thousand pages open on busy
  links do not keep the dashboard's workers for themselves.
- A page asks for its events with a token signed with SECRET_KEY, made by
  the view that showed it (`events_url`), naming the channels its person
  may follow: the link's, or their own (everyone's for a superuser). serve_live opens a stream only on a token under
  TOKEN_MAX_AGE old; a stream ends after STREAM_SECONDS, and the page asks
  its view for a new token (so a person removed from a team stops getting
  its events within that time).
"""

import logging

import orjson
import redis
from django.core import signing
from django.db import connection, transaction
from django.urls import reverse

from slingshot.redis import get_redis
from teams import access

log = logging.getLogger(__name__)

CHANNEL_PREFIX = "slingshot:live:"
ALL = "all"
TOKEN_SALT = "slingshot.live.events"
TOKEN_MAX_AGE = 120
STREAM_SECONDS = 300


def link_channels(link) -> list[str]:
    return [f"link:{link.pk}"]


def overview_channels(user) -> list[str]:
    """The person's own channel, told of the clicks of every team they are
    a member of as the clicks come (so one removed from a team stops hearing
    it at once); everyone's for a superuser's session. No query."""
    if access.team_ids(user) is None:  # a superuser's session: every team
        return [ALL]
    return [f"user:{user.pk}"]


def events_url(channels: list[str]) -> str:
    token = signing.dumps(channels, salt=TOKEN_SALT, compress=True)
    return reverse("web:live-events") + "?t=" + token


def channels_of(token: str) -> list[str] | None:
    """The channels a token names, or None for a token that is not ours or too old."""
    try:
        channels = signing.loads(token, salt=TOKEN_SALT, max_age=TOKEN_MAX_AGE)
    except signing.BadSignature:
        return None
    if not isinstance(channels, list) or not all(isinstance(name, str) for name in channels):
        return None
    return channels


_MEMBERS = "SELECT DISTINCT user_id FROM teams_membership WHERE team_id = ANY(%s)"
_LINKS = """
SELECT l.id, l.team_id, coalesce(t.clicks, 0), coalesce(t.human_clicks, 0)
FROM links_link l LEFT JOIN link_click_totals t ON t.link_id = l.id
WHERE l.id = ANY(%s)
"""


def on_batch_stored(sender, *, cursor, batch, **kwargs) -> None:
    if not batch.clicks or not batch.link_ids:
        return
    link_ids = sorted(batch.link_ids)
    transaction.on_commit(lambda: publish(link_ids))


def publish(link_ids: list[int]) -> None:
    """Tells the pages of these links, and of their teams, that clicks came;
    Redis failing is logged, never raised into the commit it follows."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(_LINKS, [link_ids])
            rows = cursor.fetchall()
            cursor.execute(_MEMBERS, [sorted({team_id for _, team_id, _, _ in rows})])
            members = [user_id for (user_id,) in cursor.fetchall()]
        pipe = get_redis().pipeline(transaction=False)
        for link_id, _, clicks, human in rows:
            pipe.publish(f"{CHANNEL_PREFIX}link:{link_id}", orjson.dumps({"clicks": clicks, "human": human}))
        for channel in [*(f"user:{user_id}" for user_id in members), ALL]:
            pipe.publish(CHANNEL_PREFIX + channel, b"{}")
        pipe.execute()
    except (redis.RedisError, OSError) as exc:
        log.warning("live pages not told of new clicks: %s", exc)

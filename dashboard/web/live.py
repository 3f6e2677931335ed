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
- The rest of what the clicks change on the page (its live part: the link
  page's report, the overview's figures) serve_live makes itself, in
  Django, once for every page that shows the same part (web/live_parts.py),
  and pushes it with the page's events, so that a thousand open pages cost
  the dashboard's workers nothing.
- A page asks for its events with a token signed with SECRET_KEY, made by
  the view that showed it (`events_url`), naming the channels its person
  may follow (the link's, or their own: everyone's for a superuser), the
  part it shows (the view, the link, its report's choices and the time
  zone) and the person, as whom serve_live makes the part. serve_live opens
  a stream only on a token under TOKEN_MAX_AGE old; a stream ends after
  STREAM_SECONDS, and the page asks its view for a new token (so a person
  removed from a team stops getting its events within that time).
"""

import logging
from typing import NamedTuple

import orjson
import redis
from django.core import signing
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from slingshot.redis import get_redis
from teams import access

log = logging.getLogger(__name__)

CHANNEL_PREFIX = "slingshot:live:"
ALL = "all"
TOKEN_SALT = "slingshot.live.events"
TOKEN_MAX_AGE = 120
STREAM_SECONDS = 300


class Subscription(NamedTuple):
    """What a token names: the channels a page hears, and the part it shows
    (None: the page fetches it itself) with the person it is made as."""

    channels: list[str]
    part: dict | None = None
    user: int | None = None


def link_channels(link) -> list[str]:
    return [f"link:{link.pk}"]


def link_part(request, link) -> dict:
    """The link page's live part, for everyone who reads the link with the
    same report choices in the same zone (what it shows is the same)."""
    return {"view": "link", "slug": link.slug, "query": request.GET.urlencode(), "zone": _zone()}


def overview_part(request) -> dict:
    """The overview's live part, its person's own."""
    return {"view": "overview", "for": request.user.pk, "zone": _zone()}


def _zone() -> str:
    return timezone.get_current_timezone_name()


def link_events_url(request, link) -> str:
    return events_url(link_channels(link), link_part(request, link), request.user)


def overview_events_url(request) -> str:
    return events_url(overview_channels(request.user), overview_part(request), request.user)


def overview_channels(user) -> list[str]:
    """The person's own channel, told of the clicks of every team they are
    a member of as the clicks come (so one removed from a team stops hearing
    it at once); everyone's for a superuser's session. No query."""
    if access.team_ids(user) is None:  # a superuser's session: every team
        return [ALL]
    return [f"user:{user.pk}"]


def events_url(channels: list[str], part: dict | None = None, user=None) -> str:
    """The events URL of a page hearing `channels`; with `part`, serve_live
    pushes the page its part, made as `user`."""
    content = {"c": channels} if part is None else {"c": channels, "p": part, "u": user.pk}
    token = signing.dumps(content, salt=TOKEN_SALT, compress=True)
    return reverse("web:live-events") + "?t=" + token


def subscription_of(token: str) -> Subscription | None:
    """What a token names, or None for a token that is not ours or too old.
    A token of the release before (a list of channels) names no part."""
    try:
        content = signing.loads(token, salt=TOKEN_SALT, max_age=TOKEN_MAX_AGE)
    except signing.BadSignature:
        return None
    if isinstance(content, list):
        content = {"c": content}
    if not isinstance(content, dict):
        return None
    channels, part, user = content.get("c"), content.get("p"), content.get("u")
    if not isinstance(channels, list) or not all(isinstance(name, str) for name in channels):
        return None
    if part is not None and not (isinstance(part, dict) and isinstance(user, int)):
        return None
    return Subscription(channels, part, user)


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

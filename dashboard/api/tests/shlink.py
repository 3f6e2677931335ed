"""What the tests of Shlink's API (api/shlink/) share: a client with an
X-Api-Key, and visits stored the way the importer stores the edge's."""

import uuid
from datetime import datetime, timedelta, timezone

from rest_framework.test import APIClient

from links.models import Link
from testing.streams import entry, importer
from tokens.services import token_create

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
PROBLEM = "application/problem+json"


def shlink_client(user=None, scope: str = "write", *, key: str | None = None, **token_fields) -> APIClient:
    """A client of /rest/ sending `key`, or a fresh token of `user`'s, as X-Api-Key."""
    if key is None:
        _, key = token_create(user=user, name="shlink", scope=scope, **token_fields)
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=key)
    return client


def store_visits(*visits: tuple[Link | str, str], minutes_ago: int = 30, **orphan) -> None:
    """Stores a click per (link, user agent), or an orphan visit per (slug,
    user agent) with `kind` and `domain`, a minute apart, through the
    importer."""
    start = datetime.now(timezone.utc) - timedelta(minutes=minutes_ago)
    clicks = []
    for n, (link, agent) in enumerate(visits):
        at = int((start + timedelta(minutes=n)).timestamp() * 1000)
        slug, link_id = (link, None) if isinstance(link, str) else (link.slug, link.pk)
        extra = {} if link_id else {"kind": orphan.get("kind", "unknown"), "domain": orphan.get("domain", "")}
        clicks.append(
            {
                "ts": at,
                "slug": slug,
                "link": link_id,
                "ip": "198.51.100.4",
                "ua": agent,
                "ref": "https://mail.example/",
                **extra,
            }
        )
    made = importer("shlink-" + uuid.uuid4().hex[:8])
    made.store(made.maker.make([entry(clicks)]))

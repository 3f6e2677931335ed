"""Shlink's real-time updates on Redis pub/sub, read by a real subscriber
and checked against Shlink's own schemas (api/tests/shlink_spec)."""

import time

import orjson
import pytest

from api.tests.shlink import BROWSER, store_visits
from api.tests.test_shlink_shapes import conforms
from slingshot.redis import get_redis
from testing.factories import make_link, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def subscriber():
    pubsub = get_redis().pubsub()
    pubsub.psubscribe("https://shlink.io/*")
    pubsub.get_message(timeout=1)  # the subscription's confirmation
    yield pubsub
    pubsub.close()


def received(pubsub, count: int, seconds: float = 5.0) -> list[tuple[str, dict]]:
    got, deadline = [], time.monotonic() + seconds
    while len(got) < count and time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.2)
        if message and message["type"] == "pmessage":
            got.append((message["channel"].decode(), orjson.loads(message["data"])))
    return got


def test_visits_and_new_short_urls_are_published_on_shlinks_topics(settings, subscriber):
    settings.SHLINK_REDIS_PUB_SUB = True
    owner = make_user()
    link = make_link(owner=owner, url="https://example.org/", slug="rt" + str(time.time_ns())[-8:])
    [(topic, payload)] = received(subscriber, 1)
    assert topic == "https://shlink.io/new-short-url"
    conforms(payload["shortUrl"], "ShortUrl")
    assert payload["shortUrl"]["shortCode"] == link.slug

    store_visits((link, BROWSER), ("nope-" + link.slug, BROWSER))
    got = received(subscriber, 3)
    topics = sorted(topic for topic, _ in got)
    assert topics == [
        "https://shlink.io/new-orphan-visit",
        "https://shlink.io/new-visit",
        f"https://shlink.io/new-visit/{link.slug}",
    ]
    by_topic = dict(got)
    visit = by_topic["https://shlink.io/new-visit"]
    assert visit == by_topic[f"https://shlink.io/new-visit/{link.slug}"]
    conforms(visit["shortUrl"], "ShortUrl")
    conforms(visit["visit"], "Visit")
    assert visit["shortUrl"]["visitsSummary"]["total"] == 1  # counted with the visit it announces
    orphan = by_topic["https://shlink.io/new-orphan-visit"]
    conforms(orphan["visit"], "OrphanVisit")
    assert orphan["visit"]["visitedUrl"].endswith("/nope-" + link.slug)


def test_nothing_is_published_unless_asked_for(settings, subscriber):
    settings.SHLINK_REDIS_PUB_SUB = False
    link = make_link(owner=make_user(), url="https://example.org/")
    store_visits((link, BROWSER))
    assert received(subscriber, 1, seconds=1) == []

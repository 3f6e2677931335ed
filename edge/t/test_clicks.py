"""Clicks: buffered per worker, flushed from a timer to the stream."""
import time
import uuid

import orjson
import pytest

from clicks.importer import STREAM
from links.publishing import link_key
from links.redis import get_redis


def publish_raw(slug: str, url: str = "https://example.com/") -> None:
    get_redis().set(link_key(slug), orjson.dumps({"url": url, "status": 302, "active": True}))


def stream_clicks(slug: str) -> list[dict]:
    found = []
    for _, fields in get_redis().xrange(STREAM):
        assert fields[b"v"] == b"1"
        found += [click for click in orjson.loads(fields[b"clicks"]) if click["slug"] == slug]
    return found


def wait_for_clicks(slug: str, count: int, timeout: float = 5.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        found = stream_clicks(slug)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_every_redirect_is_one_click_with_a_unique_id(edge):
    slug = "k" + uuid.uuid4().hex[:10]
    publish_raw(slug)
    before = int(time.time() * 1000)
    for i in range(200):
        assert edge.request(f"/{slug}", headers={"User-Agent": f"agent-{i}"}).status == 302
    found = wait_for_clicks(slug, 200)
    time.sleep(0.2)
    found = stream_clicks(slug)
    assert len(found) == 200
    assert len({click["id"] for click in found}) == 200
    assert all(len(click["id"]) == 32 and int(click["id"], 16) >= 0 for click in found)
    assert sorted(click["ua"] for click in found) == sorted(f"agent-{i}" for i in range(200))
    assert all(click["ip"] == "127.0.0.1" and before - 1000 <= click["ts"] <= time.time() * 1000 for click in found)


def test_head_requests_and_misses_are_not_clicks(edge):
    slug = "h" + uuid.uuid4().hex[:10]
    publish_raw(slug)
    assert edge.request(f"/{slug}", method="HEAD").status == 302
    assert edge.request("/healthz").status == 200
    assert edge.request(f"/{slug}x").status == 404
    time.sleep(0.3)
    assert stream_clicks(slug) == []
    assert stream_clicks(slug + "x") == []


def test_long_headers_are_cut(edge):
    slug = "l" + uuid.uuid4().hex[:10]
    publish_raw(slug)
    edge.request(f"/{slug}", headers={"User-Agent": "u" * 3000, "Referer": "https://r.example/" + "r" * 3000})
    (click,) = wait_for_clicks(slug, 1)
    assert len(click["ua"]) == 512 and len(click["ref"]) == 1024


def test_a_graceful_stop_flushes_the_buffer(make_edge):
    # A flush interval far longer than the test: only the exit flush can deliver.
    edge = make_edge(env={"EDGE_CLICK_FLUSH_INTERVAL": "60"})
    slug = "q" + uuid.uuid4().hex[:10]
    publish_raw(slug)
    for _ in range(25):
        assert edge.request(f"/{slug}").status == 302
    assert stream_clicks(slug) == []
    edge.stop()
    assert len(stream_clicks(slug)) == 25

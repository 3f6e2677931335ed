"""Redis going away: cached links keep redirecting, the rest get a quick 503,
and the clicks buffered meanwhile arrive, every one, once Redis is back."""

import time
import uuid

import pytest
from edge_helpers import Traffic, delta, following, metrics, publish, wait_for_clicks, wait_for_notifications

from devstack.net import free_port


def test_redis_down_during_traffic(make_edge, private_redis):
    edge = make_edge(workers=2, env={**private_redis.edge_env(), "EDGE_CLICK_RETRY_MAX": "0.5"})
    client = private_redis.client()
    cached, uncached = "d" + uuid.uuid4().hex[:10], "u" + uuid.uuid4().hex[:10]
    seen = following(edge, client)
    publish(client, cached)
    publish(client, uncached)
    wait_for_notifications(edge, seen + 2 * 2)
    assert edge.request("/healthz").status == 200

    with Traffic(edge.port, f"/{cached}") as traffic:
        time.sleep(0.5)
        private_redis.stop()
        down_at = len(traffic.served)
        time.sleep(0.3)

        started = time.monotonic()
        response = edge.request(f"/{uncached}")
        assert response.status == 503
        assert time.monotonic() - started < 1.0
        assert b"Temporarily unavailable" in response.body
        health = edge.request("/healthz")
        assert health.status == 503 and b"redis" in health.body
        time.sleep(0.7)
        during = metrics(edge)
        assert during["slingshot_edge_click_buffer_depth"] > 0

        private_redis.start()
        time.sleep(0.5)
    served = traffic.served
    assert traffic.failed == []
    assert set(served) == {302}
    assert len(served) - down_at > 100, "traffic went on while Redis was away"

    found = wait_for_clicks(client, cached, len(served), timeout=10)
    # A batch Redis stored but could not confirm before it stopped is sent
    # again: repeats share the click id, and the importer stores each id once.
    assert len({click["id"] for click in found}) == len(served)
    after = metrics(edge)
    assert after["slingshot_edge_clicks_dropped_total"] == 0
    assert after["slingshot_edge_click_buffer_depth"] == 0
    assert after['slingshot_edge_redis_errors_total{op="clicks"}'] >= 1
    assert delta({}, after, 'slingshot_edge_requests_total{outcome="unavailable"}') == 1
    assert edge.request(f"/{uncached}").status == 302
    assert edge.request("/healthz").status == 200


def test_a_worker_cut_off_from_the_change_feed_drops_its_cache_when_redis_is_back(make_edge, private_redis):
    # One worker, so that the cached copy is the one asked again.
    edge = make_edge(workers=1, env={**private_redis.edge_env(), "EDGE_CACHE_TTL": "300"})
    client = private_redis.client()
    slug = "f" + uuid.uuid4().hex[:10]
    publish(client, slug, "https://example.com/before")
    assert edge.request(f"/{slug}").headers["Location"] == "https://example.com/before"
    before = metrics(edge)

    private_redis.stop()
    wait = time.monotonic() + 5
    while delta(before, metrics(edge), 'slingshot_edge_redis_errors_total{op="changes"}') < 1:
        assert time.monotonic() < wait, "the failed reads of the change feed were not counted"
    private_redis.start()
    # Changed while the worker could not follow the feed, as a change whose
    # notification was lost would be: no entry in the change stream.
    client.set(f"slingshot:link:{slug}", b'{"id": 1, "url": "https://example.com/after"}')

    wait = time.monotonic() + 5
    while edge.request(f"/{slug}").headers["Location"] != "https://example.com/after":
        assert time.monotonic() < wait, "the cache held a copy from before the outage"
        time.sleep(0.05)


@pytest.mark.parametrize("where", ["refused", "blackholed"])
def test_an_unreachable_redis_answers_503_quickly(make_edge, where):
    # refused: nothing listens on the port; blackholed: a non-routable address,
    # where only the 100 ms connect timeout ends the wait.
    if where == "refused":
        env = {"REDIS_PORT": str(free_port())}
    else:
        env = {"REDIS_HOST": "10.255.255.1"}
    edge = make_edge(env=env)
    started = time.monotonic()
    for _ in range(5):
        assert edge.request("/x" + uuid.uuid4().hex[:8]).status == 503
    assert edge.request("/healthz").status == 503
    assert time.monotonic() - started < 2.0


def test_an_error_reply_to_a_lookup_is_a_503_not_an_unknown_link(make_edge, private_redis):
    """A replica resyncing answers LOADING, an error: the link is not known to
    be missing, so the visit is a 503 and nothing is cached as unknown. (Here
    the error is a WRONGTYPE, from a key of another type.)"""
    edge = make_edge(workers=1, env=private_redis.edge_env())
    rds = private_redis.client()
    slug = "e" + uuid.uuid4().hex[:8]
    rds.hset(f"slingshot:link:{slug}", "not", "a string")
    assert edge.request(f"/{slug}").status == 503
    rds.delete(f"slingshot:link:{slug}")
    rds.set(f"slingshot:link:{slug}", b'{"id": 9, "url": "https://example.com/back", "status": 302, "active": true}')
    response = edge.request(f"/{slug}")  # asked again at once: no negative entry was kept
    assert response.status == 302 and response.headers["Location"] == "https://example.com/back"

"""Redis away or hung for longer than the cache TTL: every link an edge has
cached is served as Redis last gave it, the rest get a 503 with Retry-After
(never a 404), and what changed meanwhile is served once Redis answers
(linkcache.lua)."""

import os
import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from edge_helpers import Traffic, delta, following, metrics, on_each_worker, publish, wait_for_notifications

from devstack.http_client import http_request
from devstack.supervised import wait_until

TTL = 0.5  # EDGE_CACHE_TTL and EDGE_NEGATIVE_TTL here: the outage lasts many times over
STALE = "slingshot_edge_cache_stale_hits_total"


class Outage:
    """Redis killed (nothing listens) or hung (SIGSTOP: connections are
    taken and never answered), then back."""

    def __init__(self, server, how: str) -> None:
        self.server, self.how = server, how

    def begin(self) -> None:
        if self.how == "killed":
            self.server.stop()
        else:
            os.kill(self.server.stack.redis.pid, signal.SIGSTOP)

    def end(self) -> None:
        if self.how == "killed":
            self.server.start()
        else:
            os.kill(self.server.stack.redis.pid, signal.SIGCONT)


def locations(edge, slug: str, times: int = 8) -> set[str | None]:
    """What `times` new connections (spread over the workers) are sent to."""
    return {http_request(edge.port, f"/{slug}").headers.get("Location") for _ in range(times)}


@pytest.mark.parametrize("how", ["killed", "hung"])
def test_an_outage_longer_than_the_cache_ttl_fails_no_cached_link(make_edge, private_redis, how):
    env = {**private_redis.edge_env(), "EDGE_CACHE_TTL": str(TTL), "EDGE_NEGATIVE_TTL": str(TTL)}
    edge = make_edge(workers=2, env=env)
    client = private_redis.client()
    cached, changed, uncached, unknown = (p + uuid.uuid4().hex[:10] for p in "ccun")
    seen = following(edge, client)
    publish(client, cached, "https://example.com/cached")
    publish(client, changed, "https://example.com/before")
    publish(client, uncached, "https://example.com/uncached")
    wait_for_notifications(edge, seen + 3 * 2)  # else a late eviction would drop what is cached next
    # Cached by every worker: a visit during the outage may reach any.
    assert set(on_each_worker(edge, f"/{cached}").values()) == {(302, "https://example.com/cached")}
    assert set(on_each_worker(edge, f"/{changed}").values()) == {(302, "https://example.com/before")}
    assert locations(edge, unknown) == {None}  # a 404, cached as unknown
    before = metrics(edge)

    outage = Outage(private_redis, how)
    with Traffic(edge.port, f"/{cached}") as traffic:
        time.sleep(0.3)
        outage.begin()
        try:
            time.sleep(8 * TTL)
            # What Redis never gave this edge, or gave as unknown before the
            # outage, is not answered as unknown now: it may exist.
            for slug in (uncached, unknown):
                response = http_request(edge.port, f"/{slug}")
                assert (response.status, response.headers.get("Retry-After")) == (503, "5"), slug
            assert locations(edge, changed) == {"https://example.com/before"}
            during = metrics(edge)
        finally:
            outage.end()
        # Changed while the edge could not read Redis, with no change
        # notification for it: the edge asks again for everything it cached.
        client.set(f"slingshot:link:{changed}", b'{"id": 2, "url": "https://example.com/after"}')
        back = time.monotonic()
        while locations(edge, changed) != {"https://example.com/after"}:
            assert time.monotonic() - back < 1.0, "a link changed in the outage served old after Redis came back"
        time.sleep(0.3)
    assert traffic.failed == []
    assert set(traffic.served) == {302}, "a cached link failed a visit during the outage"
    assert delta(before, during, STALE) >= 2  # both workers, past their TTL
    assert locations(edge, uncached) == {"https://example.com/uncached"}
    # An unknown slug stays a 503 for a few seconds more (a link made in the
    # outage may still be on its way from the publisher), then is a 404.
    assert http_request(edge.port, f"/{unknown}").status == 503
    wait_until(lambda: locations(edge, unknown) == {None}, timeout=7, what="the unknown slug's 404")


def test_stale_serving_ends_after_edge_stale_ttl(make_edge, private_redis):
    env = {**private_redis.edge_env(), "EDGE_CACHE_TTL": str(TTL), "EDGE_STALE_TTL": "1.5"}
    edge = make_edge(workers=1, env=env)
    client = private_redis.client()
    # Following the change stream from here: what it caches now is not asked
    # again (and confirmed later) once it finds the stream's end.
    following(edge, client)
    slug = "s" + uuid.uuid4().hex[:10]
    publish(client, slug, "https://example.com/stale")
    confirmed = time.monotonic()  # Redis gave the link a moment after this
    assert http_request(edge.port, f"/{slug}").status == 302
    private_redis.stop()
    statuses = []
    while time.monotonic() - confirmed < 3.0:
        statuses.append((time.monotonic() - confirmed, http_request(edge.port, f"/{slug}").status))
        time.sleep(0.05)
    served = [at for at, status in statuses if status == 302]
    refused = [at for at, status in statuses if status == 503]
    assert {status for _, status in statuses} == {302, 503}
    assert 1.5 <= min(refused) < 1.7 and max(served) < min(refused), statuses


def test_a_replica_out_of_step_answers_no_slug_as_unknown(make_edge, private_redis):
    """A replica whose primary is gone (a failover under way) may lack links
    made since: a slug it does not have is a 503 and cached as nothing, so
    the link is served as soon as the replica has it."""
    primary = private_redis.client()
    edge = make_edge(workers=1, env=private_redis.edge_env())
    slug = "r" + uuid.uuid4().hex[:10]
    primary.replicaof("127.0.0.1", 9)  # nothing listens on port 9: never in step
    try:
        response = http_request(edge.port, f"/{slug}")
        assert (response.status, response.headers.get("Retry-After")) == (503, "5")
    finally:
        primary.replicaof("no", "one")
    # Set as the publisher would, but with no change notification to evict
    # a negative entry: only a slug not cached as unknown is served now.
    primary.set(f"slingshot:link:{slug}", b'{"id": 3, "url": "https://example.com/made-in-the-failover"}')
    response = http_request(edge.port, f"/{slug}")
    assert (response.status, response.headers.get("Location")) == (302, "https://example.com/made-in-the-failover")
    assert "not in step with its primary (connect" in edge.errors()


def test_a_redis_that_stalls_for_less_than_a_read_answers_an_unknown_slug_404_not_503(make_edge, private_redis):
    """Redis, or the machine under it, stalls for longer than the change
    stream's blocking read but less than a read's timeout: the follower
    hears from it late, which is not yet a Redis that failed. A slug cached
    as unknown is asked again rather than answered 503, and Redis's "no such
    key" stands, since the follower's answer came first. (A worker starved
    of CPU on a loaded machine hears late in the same way.)"""
    env = {**private_redis.edge_env(), "EDGE_REDIS_READ_TIMEOUT_MS": "1500"}
    edge = make_edge(workers=1, env=env)
    following(edge, private_redis.client())
    unknown = "u" + uuid.uuid4().hex[:10]
    assert http_request(edge.port, f"/{unknown}").status == 404  # cached as unknown
    pid = private_redis.stack.redis.pid
    with ThreadPoolExecutor(1) as pool:
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(0.6)  # past EDGE_LINK_CHANGES_INTERVAL + 0.1 s: the follower is late
            answer = pool.submit(http_request, edge.port, f"/{unknown}")
            time.sleep(0.3)
            assert not answer.done(), "answered without asking Redis again"
        finally:
            os.kill(pid, signal.SIGCONT)
        response = answer.result()
    assert (response.status, response.headers.get("Retry-After")) == (404, None)
    assert "not believed" not in edge.errors()

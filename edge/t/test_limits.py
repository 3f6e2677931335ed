"""Activation and limits at the edge: valid_since, max_visits counted exactly
across workers, and links with a password sent to the dashboard."""

import signal
import threading
import time
import uuid

import pytest
from edge_helpers import PrivateRedis, delta, link_id, metrics, publish, session_redis, wait_for_clicks

from devstack.http_client import http_request
from devstack.supervised import wait_until
from slingshot.contract import visits_key


def test_a_link_before_valid_since_is_answered_as_unknown(edge, rds):
    later, sooner = "vs" + uuid.uuid4().hex[:8], "vp" + uuid.uuid4().hex[:8]
    publish(rds, later, valid_since=int(time.time()) + 3600)
    publish(rds, sooner, valid_since=int(time.time()) - 1)
    before = metrics(edge)
    assert edge.request(f"/{later}").status == 404
    assert edge.request(f"/{sooner}").status == 302
    after = metrics(edge)
    assert (
        after['slingshot_edge_requests_total{outcome="scheduled"}']
        - before.get('slingshot_edge_requests_total{outcome="scheduled"}', 0)
        == 1
    )
    (visit,) = wait_for_clicks(rds, later, 1)
    assert (visit.get("link"), visit["orphan"], visit["kind"]) == (None, True, "scheduled")  # no click of the link


def test_not_found_redirect_covers_scheduled_links(make_edge, private_redis):
    """On a Redis of its own: a domain another test published for this
    host, with no not-found redirect, would stand in for the default."""
    edge = make_edge(env={**private_redis.edge_env(), "EDGE_NOT_FOUND_URL": "https://www.example.com/missing"})
    slug = "vn" + uuid.uuid4().hex[:8]
    publish(private_redis.client(), slug, valid_since=int(time.time()) + 3600)
    response = edge.request(f"/{slug}")
    assert (response.status, response.headers["Location"]) == (302, "https://www.example.com/missing")


def test_max_visits_is_exact_under_concurrent_traffic_from_several_workers(make_edge):
    """No redirect over the limit and none refused under it, with requests
    on new connections spread over the workers of two edges at once."""
    client = session_redis()
    edges = [make_edge(workers=3), make_edge(workers=2)]
    slug, limit, visitors, each = "mv" + uuid.uuid4().hex[:8], 1000, 8, 300
    publish(client, slug, max_visits=limit)
    statuses: list[int] = []
    lock = threading.Lock()

    def visit(n: int) -> None:
        port = edges[n % 2].port
        mine = [http_request(port, f"/{slug}").status for _ in range(each)]
        with lock:
            statuses.extend(mine)

    threads = [threading.Thread(target=visit, args=(n,)) for n in range(visitors)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(statuses) == visitors * each
    assert statuses.count(302) == limit
    assert statuses.count(410) == visitors * each - limit
    assert int(client.get(visits_key(link_id(slug)))) == visitors * each
    # Every refused visit is an orphan visit of kind `limit`, counted as served.
    clicks = wait_for_clicks(client, slug, visitors * each, timeout=10)
    assert len([click for click in clicks if "link" in click]) == limit
    refused = [click for click in clicks if click.get("orphan")]
    assert len(refused) == visitors * each - limit
    assert {(click["kind"], click["domain"]) for click in refused} == {("limit", "")}


def test_head_requests_look_at_the_limit_without_using_it(edge, rds):
    slug = "mh" + uuid.uuid4().hex[:8]
    publish(rds, slug, max_visits=1)
    for _ in range(3):
        assert edge.request(f"/{slug}", method="HEAD").status == 302
    assert edge.request(f"/{slug}").status == 302
    assert edge.request(f"/{slug}", method="HEAD").status == 410
    assert edge.request(f"/{slug}").status == 410


@pytest.fixture
def replicated(make_edge):
    """A primary and a replica of their own, and a factory of an edge that
    reads links from that replica and of a limited link it has visited."""
    primary, replica = PrivateRedis().start(), PrivateRedis().start()

    def limited(*, workers: int, limit: int, visits: int):
        env = {
            **primary.edge_env(),
            "EDGE_LINKS_REDIS_PORT": str(replica.stack.redis_port),
            "EDGE_LINKS_REDIS_PASSWORD": replica.stack.redis_password,
        }
        edge = make_edge(workers=workers, env=env)
        slug = "mr" + uuid.uuid4().hex[:8]
        key = visits_key(link_id(slug))
        for server in (primary, replica):
            publish(server.client(), slug, max_visits=limit)
        assert [http_request(edge.port, f"/{slug}").status for _ in range(visits)] == [302] * visits
        assert int(primary.client().get(key)) == visits
        replica.client().set(key, visits)  # as replication would have it
        return edge, slug, key

    try:
        yield primary, replica, limited
    finally:
        replica.stack.redis.send_signal(signal.SIGCONT)
        for server in (primary, replica):
            server.stop()
            server.cleanup()


def test_with_no_primary_a_limited_link_is_counted_on_the_edge_and_sent_once_one_answers(replicated):
    """The primary killed (a failover under way): the edge reads the counter
    from its replica, lets visits through while that count and its own stay
    within the limit, and adds its own to the primary once it is back."""
    primary, _, limited = replicated
    limit = 10
    edge, slug, key = limited(workers=2, limit=limit, visits=3)
    before = metrics(edge)

    primary.stop()
    statuses = [http_request(edge.port, f"/{slug}").status for _ in range(9)]
    assert statuses == [302] * (limit - 3) + [410] * 2
    assert delta(before, metrics(edge), "slingshot_edge_visits_counted_here_total") == 9

    primary.start()  # append-only: it kept its 3
    wait_until(lambda: int(primary.client().get(key)) == 3 + 9, timeout=10, what="the edge's count sent")
    assert http_request(edge.port, f"/{slug}").status == 410
    time.sleep(0.5)  # flushes that found nothing more to send
    assert int(primary.client().get(key)) == 3 + 9 + 1


def test_with_no_primary_and_a_hung_replica_a_worker_counts_on_from_the_count_it_last_read(replicated):
    """The primary killed, then the replica hung too (as while Sentinel has
    it follow a new primary): the worker counts on from the counter as it
    last read it, and its visits reach the primary once it is back."""
    primary, replica, limited = replicated
    edge, slug, key = limited(workers=1, limit=6, visits=2)
    before = metrics(edge)

    primary.stop()
    assert http_request(edge.port, f"/{slug}").status == 302  # 2 on the replica, 1 here
    replica.stack.redis.send_signal(signal.SIGSTOP)  # hung: it accepts connections, answers none
    statuses = [http_request(edge.port, f"/{slug}").status for _ in range(5)]
    assert statuses == [302] * 3 + [410] * 2  # 2 read last, and 2 to 6 here
    after = metrics(edge)
    assert delta(before, after, "slingshot_edge_visits_from_last_read_total") == 5
    assert delta(before, after, "slingshot_edge_visits_counted_here_total") == 6
    assert "counted from the last read" in edge.log_path.read_text()

    replica.stack.redis.send_signal(signal.SIGCONT)
    primary.start()  # append-only: it kept its 2
    wait_until(lambda: int(primary.client().get(key) or 0) == 2 + 6, timeout=10, what="the count sent")

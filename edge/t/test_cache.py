"""The per-worker link cache: follows every change within a second, one
Redis lookup per slug per worker at a time, unknown slugs cached briefly."""

import threading
import time
import uuid
from datetime import datetime, timezone

import pytest
from edge_helpers import delta, following, metrics, publish, wait_for_notifications, wait_until

from devstack.http_client import http_request
from links import services
from testing.factories import make_link, make_user

LOOKUPS = "slingshot_edge_redis_lookups_total"


def new_slug() -> str:
    return "c" + uuid.uuid4().hex[:10]


def answer(edge, slug: str) -> tuple[int, str | None]:
    response = edge.request(f"/{slug}")  # a new connection each time: any worker may answer
    return response.status, response.headers.get("Location")


def served_within_a_second(edge, changed_at: float, slug: str, expected: tuple) -> None:
    """Every answer for `slug` from a second after `changed_at` on is `expected`,
    for half a second and for at least 20 answers (on a loaded machine half a
    second can hold fewer)."""
    seen = []
    while time.monotonic() < changed_at + 1.5 or len([at for at, _ in seen if at >= 1.0]) < 20:
        seen.append((time.monotonic() - changed_at, answer(edge, slug)))
    stale = [at for at, got in seen if got != expected]
    assert stale == [] or max(stale) < 1.0, f"old answer {max(stale):.2f}s after the change"


CHANGES = {
    "new target": ({"url": "https://example.com/new"}, (302, "https://example.com/new")),
    "disabled": ({"is_active": False}, (404, None)),
    "expired": ({"expires_at": datetime(2020, 1, 1, tzinfo=timezone.utc)}, (410, None)),
    "renamed": ({"slug": None}, (404, None)),
    "deleted": (None, (404, None)),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("change", CHANGES)
def test_every_worker_follows_a_change_made_in_the_dashboard_within_a_second(make_edge, through_publisher, change):
    """Through the production path: the service, the outbox, the publisher process, Redis, the edge."""
    edge = make_edge(workers=2)
    owner = make_user()
    link = make_link(owner=owner, url="https://example.com/old")
    wait_until(
        lambda: all(answer(edge, link.slug) == (302, "https://example.com/old") for _ in range(20)),
        what="the new link at every worker",
    )
    before = metrics(edge)

    fields, expected = CHANGES[change]
    old_slug, changed_at = link.slug, time.monotonic()
    if fields is None:
        services.link_delete(link=link)
    else:
        if "slug" in fields:
            fields = {"slug": new_slug()}
        services.link_update(link=link, **fields)
    served_within_a_second(edge, changed_at, old_slug, expected)
    if change == "renamed":
        assert answer(edge, link.slug) == (302, "https://example.com/old")
    after = metrics(edge)
    assert delta(before, after, "slingshot_edge_cache_evictions_total") >= 2, "both workers evicted"


@pytest.mark.django_db(transaction=True)
def test_a_slug_known_as_unknown_serves_its_new_link_within_a_second(make_edge, through_publisher):
    edge = make_edge(workers=2, env={"EDGE_NEGATIVE_TTL": "300"})
    slug = new_slug()
    for _ in range(20):
        assert answer(edge, slug) == (404, None)
    assert delta({}, metrics(edge), "slingshot_edge_cache_negative_hits_total") >= 10, "the workers know it as unknown"
    owner = make_user()
    changed_at = time.monotonic()
    make_link(owner=owner, url="https://example.com/created", slug=slug)
    served_within_a_second(edge, changed_at, slug, (302, "https://example.com/created"))


def test_a_hit_does_not_ask_redis(make_edge, rds):
    edge = make_edge(workers=2)
    slug = new_slug()
    seen = following(edge, rds)
    publish(rds, slug)
    wait_for_notifications(edge, seen + 2)
    for _ in range(10):
        edge.request(f"/{slug}")
    before = metrics(edge)
    for _ in range(100):
        assert edge.request(f"/{slug}").status == 302
    after = metrics(edge)
    assert delta(before, after, LOOKUPS) == 0
    assert delta(before, after, "slingshot_edge_cache_hits_total") == 100


def test_unknown_slugs_cost_one_lookup_per_worker_per_negative_ttl(make_edge):
    edge = make_edge(workers=2, env={"EDGE_NEGATIVE_TTL": "1"})
    slug = new_slug()
    before = metrics(edge)
    for _ in range(60):
        assert edge.request(f"/{slug}").status == 404
    after = metrics(edge)
    assert 1 <= delta(before, after, LOOKUPS) <= 2
    assert delta(before, after, "slingshot_edge_cache_negative_hits_total") >= 58
    time.sleep(1.1)
    for _ in range(60):
        assert edge.request(f"/{slug}").status == 404
    assert 1 <= delta(after, metrics(edge), LOOKUPS) <= 2


def test_an_expired_unknown_slug_is_answered_at_once_and_asked_again_in_the_background(make_edge, private_redis):
    edge = make_edge(
        workers=1, env={**private_redis.edge_env(), "EDGE_NEGATIVE_TTL": "0.5", "EDGE_REDIS_READ_TIMEOUT_MS": "5000"}
    )
    rds = private_redis.client()
    # Started: a worker that caches before its first read of the change
    # stream drops its cache after that read, the negative entry too.
    following(edge, rds)
    slug = new_slug()
    assert edge.request(f"/{slug}").status == 404  # looked up: unknown
    # The link appears without a change notification (as if it were missed),
    # and the negative entry expires; Redis then holds every command a while.
    rds.set(f"slingshot:link:{slug}", b'{"id": 7, "url": "https://example.com/late", "status": 302, "active": true}')
    time.sleep(0.6)
    rds.execute_command("CLIENT", "PAUSE", 3000, "ALL")
    started = time.monotonic()
    assert edge.request(f"/{slug}").status == 404  # the expired answer, without waiting for Redis
    assert edge.request(f"/{slug}").status == 404
    assert time.monotonic() - started < 1.5  # well inside the pause, even on a busy machine
    deadline = time.monotonic() + 8
    while edge.request(f"/{slug}").status != 302:  # the refresh found the link
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert edge.request(f"/{slug}").headers["Location"] == "https://example.com/late"


def test_a_miss_storm_on_one_slug_is_one_lookup_per_worker(make_edge, private_redis):
    edge = make_edge(workers=2, env={**private_redis.edge_env(), "EDGE_REDIS_READ_TIMEOUT_MS": "5000"})
    rds = private_redis.client()
    slug = new_slug()
    seen = following(edge, rds)
    publish(rds, slug)
    wait_for_notifications(edge, seen + 2)
    before = metrics(edge)
    # Redis holds every command for a while, so the storm piles up behind
    # the first lookup of each worker.
    rds.execute_command("CLIENT", "PAUSE", 700, "ALL")
    statuses = []

    def visit() -> None:
        statuses.append(http_request(edge.port, f"/{slug}").status)

    storm = [threading.Thread(target=visit) for _ in range(100)]
    started = time.monotonic()
    for thread in storm:
        thread.start()
    for thread in storm:
        thread.join()
    assert time.monotonic() - started >= 0.5, "the storm did not wait for Redis"
    assert statuses == [302] * 100
    after = metrics(edge)
    assert delta(before, after, "slingshot_edge_cache_misses_total") >= 90
    assert 1 <= delta(before, after, LOOKUPS) <= 2


def test_misses_arriving_together_share_a_round_trip_and_each_gets_its_own_link(make_edge, private_redis):
    edge = make_edge(workers=2, env={**private_redis.edge_env(), "EDGE_REDIS_READ_TIMEOUT_MS": "5000"})
    rds = private_redis.client()
    slugs = [new_slug() for _ in range(60)]
    seen = following(edge, rds)
    for slug in slugs[:50]:  # the last ten are unknown
        publish(rds, slug, f"https://example.com/{slug}")
    wait_for_notifications(edge, seen + 2 * 50)
    before = metrics(edge)
    stats_before = rds.info("commandstats")
    rds.execute_command("CLIENT", "PAUSE", 500, "ALL")
    answers = {}

    def visit(slug: str) -> None:
        response = http_request(edge.port, f"/{slug}")
        answers[slug] = (response.status, response.headers.get("Location"))

    visitors = [threading.Thread(target=visit, args=(slug,)) for slug in slugs]
    for thread in visitors:
        thread.start()
    for thread in visitors:
        thread.join()
    assert answers == {slug: (302, f"https://example.com/{slug}") for slug in slugs[:50]} | dict.fromkeys(
        slugs[50:], (404, None)
    )
    stats = rds.info("commandstats")
    round_trips = sum(
        stats.get(f"cmdstat_{c}", {}).get("calls", 0) - stats_before.get(f"cmdstat_{c}", {}).get("calls", 0)
        for c in ("get", "mget")
    )
    assert round_trips <= 10, "misses that waited together were asked for one by one"
    assert delta(before, metrics(edge), LOOKUPS) == 60

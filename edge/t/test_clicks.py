"""Clicks: buffered per worker, flushed from a timer to the stream."""

import sys
import time
import uuid
from pathlib import Path

from edge_helpers import (
    Traffic,
    delta,
    following,
    metrics,
    publish,
    stream_clicks,
    wait_for_clicks,
    wait_for_notifications,
    wait_until,
)

from clicks.accounting import served_counts
from slingshot.contract import SERVED_KEY_PREFIX


def new_slug(letter: str) -> str:
    return letter + uuid.uuid4().hex[:10]


def test_every_redirect_is_one_click_with_a_unique_id(edge, rds):
    slug = new_slug("k")
    publish(rds, slug)
    before = int(time.time() * 1000)
    for i in range(200):
        assert edge.request(f"/{slug}", headers={"User-Agent": f"agent-{i}"}).status == 302
    found = wait_for_clicks(rds, slug, 200)
    assert len(found) == 200
    assert len({click["id"] for click in found}) == 200
    assert all(len(click["id"]) == 32 and int(click["id"], 16) >= 0 for click in found)
    assert sorted(click["ua"] for click in found) == sorted(f"agent-{i}" for i in range(200))
    assert all(click["ip"] == "127.0.0.1" and before - 1000 <= click["ts"] <= time.time() * 1000 for click in found)
    assert not any("orphan" in click for click in found)


def test_visits_to_unknown_slugs_are_orphan_clicks(edge, rds):
    slug = new_slug("o")
    for _ in range(3):
        assert edge.request(f"/{slug}", headers={"Referer": "https://r.example/"}).status == 404
    found = wait_for_clicks(rds, slug, 3)
    assert len(found) == 3
    assert all(click["orphan"] is True and click["ref"] == "https://r.example/" for click in found)
    assert all(click["kind"] == "unknown" and click["domain"] == "" for click in found)


def served_redirects(rds) -> int:
    return sum(served_counts(rds.hgetall(key))[0] for key in rds.scan_iter(SERVED_KEY_PREFIX + "*"))


def served_orphans(rds) -> int:
    return sum(served_counts(rds.hgetall(key))[1] for key in rds.scan_iter(SERVED_KEY_PREFIX + "*"))


def test_visits_to_disabled_scheduled_and_expired_links_are_orphan_visits(edge, rds):
    now = int(time.time())
    states = {
        "disabled": {"active": False},
        "scheduled": {"valid_since": now + 3600},
        "expired": {"expires_at": now - 5},
    }
    slugs = {kind: new_slug(kind[0]) for kind in states}
    for kind, fields in states.items():
        publish(rds, slugs[kind], **fields)
    orphans_before = served_orphans(rds)
    for kind, status in (("disabled", 404), ("scheduled", 404), ("expired", 410)):
        assert edge.request(f"/{slugs[kind]}", method="HEAD").status == status
        assert edge.request(f"/{slugs[kind]}", headers={"Referer": "https://r.example/"}).status == status
    for kind, slug in slugs.items():
        (click,) = wait_for_clicks(rds, slug, 1)  # the HEAD is none
        assert "link" not in click and "rule" not in click
        assert (click["orphan"], click["kind"], click["domain"], click["ref"]) == (True, kind, "", "https://r.example/")
    # Counted as orphan visits served, so that the accounting balances.
    wait_until(lambda: served_orphans(rds) - orphans_before == 3, what="three orphan visits counted as served")


def test_head_requests_own_paths_and_malformed_slugs_are_not_clicks(edge, rds):
    slug = new_slug("h")
    publish(rds, slug)
    assert edge.request(f"/{slug}", method="HEAD").status == 302
    assert edge.request(f"/{slug}x", method="HEAD").status == 404
    assert edge.request("/healthz").status == 200
    assert edge.request("/metrics").status == 200
    before = len(stream_clicks(rds))
    assert edge.request(f"/{slug}.x").status == 404
    assert edge.request("/").status == 404
    time.sleep(0.3)
    assert stream_clicks(rds, slug) == []
    assert stream_clicks(rds, slug + "x") == []
    assert len(stream_clicks(rds)) == before
    assert stream_clicks(rds, "healthz") == stream_clicks(rds, "metrics") == []


def test_long_headers_are_cut(edge, rds):
    slug = new_slug("l")
    publish(rds, slug)
    edge.request(f"/{slug}", headers={"User-Agent": "u" * 3000, "Referer": "https://r.example/" + "r" * 3000})
    (click,) = wait_for_clicks(rds, slug, 1)
    assert len(click["ua"]) == 512 and len(click["ref"]) == 1024


def test_a_graceful_stop_flushes_the_buffer(make_edge, rds):
    # A flush interval far longer than the test: only the exit flush can deliver.
    edge = make_edge(env={"EDGE_CLICK_FLUSH_INTERVAL": "60"})
    slug = new_slug("q")
    publish(rds, slug)
    for _ in range(25):
        assert edge.request(f"/{slug}").status == 302
    assert stream_clicks(rds, slug) == []
    edge.stop()
    assert len(stream_clicks(rds, slug)) == 25


def test_reload_during_traffic_loses_no_click(make_edge, rds):
    edge = make_edge(workers=2)
    slug = new_slug("r")
    publish(rds, slug)

    def workers_seen() -> set[str]:
        """The id prefixes of the clicks so far: one per worker start (docs/contract.md)."""
        return {click["id"][:16] for click in stream_clicks(rds, slug)}

    with Traffic(edge.port, f"/{slug}", visitors=4) as traffic:
        wait_until(lambda: len(workers_seen()) == 2, timeout=15, what="clicks from both workers")
        for _ in range(3):
            before = workers_seen()
            edge.reload()
            # The new workers serve, and their clicks arrive.
            wait_until(
                lambda before=before: len(workers_seen() - before) >= 2, timeout=15, what="clicks from both new workers"
            )
    assert len(workers_seen()) == 2 + 3 * 2, "every worker of every generation served"
    # Connections refused or reset while listening sockets change hands are
    # not served, so they are no clicks either.
    served = traffic.served
    assert set(served) == {302}
    assert len(served) > 100
    found = wait_for_clicks(rds, slug, len(served), timeout=10)
    assert len({click["id"] for click in found}) == len(served) == len(found), (len(traffic.failed), len(served))


def test_a_full_journal_drops_counts_and_shows_the_loss_and_the_rest_arrives(make_edge, private_redis):
    # A journal of 100 KB: about 180 clicks with a User-Agent of 500 bytes.
    edge = make_edge(
        workers=1, env={**private_redis.edge_env(), "EDGE_CLICK_SPOOL_MAX_MB": "0.1", "EDGE_CLICK_RETRY_MAX": "0.2"}
    )
    client = private_redis.client()
    slug = new_slug("b")
    seen = following(edge, client)
    publish(client, slug)
    wait_for_notifications(edge, seen + 1)
    assert edge.request(f"/{slug}").status == 302  # cached now
    wait_for_clicks(client, slug, 1)
    private_redis.stop()
    before = metrics(edge)
    agent = {"User-Agent": "u" * 500}
    for _ in range(300):
        assert edge.request(f"/{slug}", headers=agent).status == 302
    # The gauges reach /metrics at the worker's next tick (every 0.1 s).
    wait_until(lambda: metrics(edge)["slingshot_edge_click_buffer_depth"] > 0, what="the journal's depth in /metrics")
    time.sleep(0.3)  # and every count of the 300 with it
    during = metrics(edge)
    dropped = delta(before, during, "slingshot_edge_clicks_dropped_total")
    kept = during["slingshot_edge_click_buffer_depth"]
    assert 150 < kept < 200 and dropped == 300 - kept
    assert 0.9 * 100 * 1024 < during["slingshot_edge_click_spool_bytes"] <= 100 * 1024
    assert delta(before, during, 'slingshot_edge_redis_errors_total{op="clicks"}') >= 1
    assert "clicks dropped until there is room" in edge.errors()
    private_redis.start()
    found = wait_for_clicks(client, slug, 1 + kept)
    assert len({click["id"] for click in found}) == len(found) == 1 + kept
    after = metrics(edge)
    assert after["slingshot_edge_click_buffer_depth"] == after["slingshot_edge_click_spool_bytes"] == 0
    assert delta(during, after, "slingshot_edge_clicks_flushed_total") == kept
    # Every one was counted as served: the loss shows in the accounting.
    wait_until(lambda: served_redirects(client) == 301, what="301 redirects counted as served")
    # The journal, sent, makes way for a new one: clicks are kept again.
    wait_until(lambda: metrics(edge)["slingshot_edge_click_journals"] == 1, what="one journal")
    assert edge.request(f"/{slug}", headers=agent).status == 302
    assert len(wait_for_clicks(client, slug, 2 + kept)) == 2 + kept


def test_headers_with_quotes_or_bytes_that_are_not_utf8_arrive_as_valid_json(edge, rds):
    slug = new_slug("j")
    publish(rds, slug)
    agents = ['say "hi" \\ ok', "caf\xe9", '","ref":"spoofed', "ünïcödé".encode().decode("latin-1")]
    for agent in agents:
        assert edge.request(f"/{slug}", headers={"User-Agent": agent}).status == 302
    found = wait_for_clicks(rds, slug, len(agents))
    assert sorted(click["ua"] for click in found) == sorted(
        ['say "hi" \\ ok', "caf\ufffd", '","ref":"spoofed', "ünïcödé"]
    )
    assert all(click["ref"] == "" for click in found)


def test_make_bench_n_edge_serves_as_the_edge_does_and_records_no_click(make_edge, rds):
    """loadtest/bench_edge.py's case (n), the click's cost measured as (b)
    less (n), holds only if (n) is (b) without its click."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "loadtest"))
    from bench_edge import without_clicks

    edge = make_edge(edit_conf=without_clicks)
    slug = new_slug("m")
    publish(rds, slug)
    before = metrics(edge)
    for _ in range(5):
        assert edge.request(f"/{slug}").status == 302
    after = metrics(edge)
    assert delta(before, after, 'slingshot_edge_requests_total{outcome="redirect"}') == 5
    assert delta(before, after, "slingshot_edge_clicks_buffered_total") == 0
    assert delta(before, after, "slingshot_edge_clicks_dropped_total") == 0
    time.sleep(0.3)
    assert stream_clicks(rds, slug) == []


def test_a_listed_link_is_451_in_the_visitors_language_and_an_orphan_visit(edge, rds):
    """A link the dashboard flagged as on a blocklist (links/flags.py,
    published `listed`, and `active: false` for older edges): never the
    redirect, a 451 page, counted as an orphan visit of kind `listed` so
    that the accounting balances."""
    slug = new_slug("l")
    publish(rds, slug, listed=True, active=False, max_visits=1000)  # as the publisher writes it
    before = metrics(edge)
    orphans_before = served_orphans(rds)
    answer = edge.request(f"/{slug}", headers={"Accept-Language": "de-DE,de;q=0.9", "Referer": "https://r.example/"})
    assert answer.status == 451 and answer.headers.get("Location") is None
    assert "<h1>Link gesperrt</h1>" in answer.body.decode() and answer.headers["Content-Language"] == "de"
    assert "Link blocked" in edge.request(f"/{slug}").body.decode()
    visits = wait_for_clicks(rds, slug, 2)
    assert sorted((c["orphan"], c["kind"], c["ref"]) for c in visits) == [
        (True, "listed", ""),
        (True, "listed", "https://r.example/"),
    ]
    wait_until(lambda: served_orphans(rds) - orphans_before == 2, what="two orphan visits counted as served")
    assert delta(before, metrics(edge), 'slingshot_edge_requests_total{outcome="listed"}') == 2
    # The flag gone, the link redirects again.
    publish(rds, slug, max_visits=1000)
    wait_until(lambda: edge.request(f"/{slug}").status == 302, what="the link served again once no longer listed")


def test_a_listed_link_to_warn_of_shows_the_destination_and_a_way_on_as_an_orphan_visit(edge, rds):
    """SCREEN_ACTION=warn (published `listed: "warn"`): a 200 warning page in
    the visitor's language, the destination shown and linked (the way on
    goes straight there, not through the edge), never a Location; an
    orphan visit of kind `listed`, as the 451 is."""
    slug = new_slug("w")
    publish(rds, slug, url="https://phish.example/login?a=1&b=<x>", listed="warn", active=False)
    orphans_before = served_orphans(rds)
    answer = edge.request(f"/{slug}", headers={"Accept-Language": "fr-FR,fr;q=0.9"})
    page = answer.body.decode()
    assert answer.status == 200 and answer.headers.get("Location") is None
    assert answer.headers["Content-Language"] == "fr" and "<h1>Attention : lien dangereux</h1>" in page
    assert 'href="https://phish.example/login?a=1&amp;b=&lt;x&gt;" rel="noreferrer nofollow"' in page
    assert "<x>" not in page and answer.headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert int(answer.headers["Content-Length"]) == len(answer.body)
    visits = wait_for_clicks(rds, slug, 1)
    assert [(c["orphan"], c["kind"]) for c in visits] == [(True, "listed")]
    wait_until(lambda: served_orphans(rds) - orphans_before == 1, what="the warning counted as served")


def test_a_link_the_staff_stopped_is_451_with_their_words_whatever_else_it_is(edge, rds):
    """Published `blocked` (moderation/): a 451 with the staff's words,
    escaped, over a listed or a password link's page; an orphan visit of
    kind `blocked`; its own words when the staff gave none."""
    slug = new_slug("b")
    publish(rds, slug, blocked="Stopped for <phishing>.", listed="warn", password=True, active=False)
    before = metrics(edge)
    answer = edge.request(f"/{slug}")
    assert answer.status == 451 and "<p>Stopped for &lt;phishing&gt;.</p>" in answer.body.decode()
    publish(rds, slug, blocked="", active=False)
    wait_until(
        lambda: "disabled by the operator of this service" in edge.request(f"/{slug}").body.decode(),
        what="the page's own words",
    )
    visits = wait_for_clicks(rds, slug, 2)
    assert [(c["orphan"], c["kind"]) for c in visits] == [(True, "blocked")] * 2
    assert delta(before, metrics(edge), 'slingshot_edge_requests_total{outcome="blocked"}') >= 2


def test_an_expired_or_used_up_link_sends_its_visitors_to_its_fallback_each_an_orphan_visit_of_its_kind(edge, rds):
    """expired_url (the link's): a 302 there instead of the 410 page, for a
    link past expires_at and for one past max_visits; each visit an orphan
    visit of kind `expired` or `limit`, as the 410 page's, so the accounting
    holds; a link without one keeps the page."""
    expired, limited, plain = new_slug("fe"), new_slug("fl"), new_slug("fp")
    publish(rds, expired, expires_at=1_000_000, expired_url="https://example.com/over")
    publish(rds, limited, max_visits=1, expired_url="https://example.com/sold-out")
    publish(rds, plain, expires_at=1_000_000)
    orphans_before = served_orphans(rds)
    answer = edge.request(f"/{expired}")
    assert (answer.status, answer.headers["Location"]) == (302, "https://example.com/over")
    assert edge.request(f"/{limited}").status == 302  # its one visit
    answer = edge.request(f"/{limited}")
    assert (answer.status, answer.headers["Location"]) == (302, "https://example.com/sold-out")
    assert edge.request(f"/{plain}").status == 410
    kinds = [
        (c.get("orphan", False), c.get("kind")) for slug in (expired, limited) for c in wait_for_clicks(rds, slug, 1)
    ]
    assert sorted(kinds, key=str) == sorted([(True, "expired"), (False, None), (True, "limit")], key=str)
    wait_until(lambda: served_orphans(rds) - orphans_before == 3, what="three orphan visits counted as served")

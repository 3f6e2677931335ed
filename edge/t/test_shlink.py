"""What the edge answers of Shlink's API on every short domain: the health
check (with CORS, for Shlink's web client in a browser), Shlink's not-found
problem for the rest of /rest/, and the tracking pixel GET /<slug>/track,
a visit of the link as a redirect would count it."""

import json
import time
import uuid

from edge_helpers import delta, link_id, metrics, publish, wait_for_clicks

from api.shlink.health import SHLINK_VERSION
from slingshot.contract import visits_key

PIXEL_SERIES = 'slingshot_edge_requests_total{outcome="pixel"}'


def test_health_answers_on_any_domain_with_the_dashboards_version_and_cors(edge):
    for path in ("/rest/health", "/rest/v3/health"):
        for host in ("127.0.0.1", "go.example.com", "unknown.example"):
            response = edge.request(path, headers={"Host": host, "Origin": "https://app.example"})
            assert response.status == 200, (path, host)
            assert response.headers["Content-Type"] == "application/health+json"
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert json.loads(response.body) == {"status": "pass", "version": SHLINK_VERSION}
    assert edge.errors() == ""


def test_a_preflight_is_answered_without_a_key(edge):
    response = edge.request(
        "/rest/v3/health",
        method="OPTIONS",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "x-api-key",
        },
    )
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "x-api-key" in response.headers["Access-Control-Allow-Headers"].lower()
    assert "GET" in response.headers["Access-Control-Allow-Methods"]


def test_the_rest_of_the_api_is_a_not_found_problem_at_the_edge(edge):
    response = edge.request("/rest/v3/short-urls", headers={"Origin": "https://app.example"})
    assert response.status == 404
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert json.loads(response.body) == {
        "type": "https://shlink.io/api/error/not-found",
        "title": "Not found",
        "detail": "Cannot GET /rest/v3/short-urls",
        "status": 404,
    }


def test_the_tracking_pixel_is_a_gif_and_a_visit_of_the_link(edge, rds):
    slug = "px" + uuid.uuid4().hex[:8]
    publish(
        rds,
        slug,
        "https://example.com/mail",
        rules=[{"url": "https://example.com/ios", "conditions": [{"type": "device", "value": "ios"}]}],
    )
    before = metrics(edge)
    response = edge.request(f"/{slug}/track", headers={"User-Agent": "iPhone OS", "Referer": "https://mail.example/"})
    assert response.status == 200
    assert response.headers["Content-Type"] == "image/gif"
    assert response.body[:6] == b"GIF89a" and len(response.body) < 64
    assert response.headers["Cache-Control"] == "private, no-store"
    assert edge.request(f"/{slug}/track", method="HEAD").status == 200  # a HEAD is no visit
    (click,) = wait_for_clicks(rds, slug, 1)
    # A visit of the link served by no rule: the pixel sends nobody anywhere.
    assert (click["link"], click.get("rule"), click["ref"]) == (str(link_id(slug)), None, "https://mail.example/")
    assert delta(before, metrics(edge), PIXEL_SERIES) == 2


def test_a_pixel_of_a_link_not_served_is_an_orphan_visit(edge, rds):
    unknown, disabled = "pu" + uuid.uuid4().hex[:8], "pd" + uuid.uuid4().hex[:8]
    publish(rds, disabled, active=False)
    assert edge.request(f"/{unknown}/track").status == 404
    assert edge.request(f"/{disabled}/track").status == 404
    ((gone,), (off,)) = wait_for_clicks(rds, unknown, 1), wait_for_clicks(rds, disabled, 1)
    assert (gone["orphan"], gone["kind"], off["kind"]) == (True, "unknown", "disabled")
    assert edge.request(f"/{unknown}/tracks").status == 404
    assert edge.request("/a/b/track").status == 404


def test_a_pixel_takes_a_visit_of_a_limited_link(edge, rds):
    slug = "pl" + uuid.uuid4().hex[:8]
    publish(rds, slug, max_visits=1, valid_since=int(time.time()) - 10)
    assert edge.request(f"/{slug}/track").status == 200
    assert edge.request(f"/{slug}/track").status == 410
    assert edge.request(f"/{slug}").status == 410
    assert int(rds.get(visits_key(link_id(slug)))) == 3
    clicks = wait_for_clicks(rds, slug, 3)
    # Each worker sends its own: the stream has them in no set order.
    assert sorted(click.get("kind") or "" for click in clicks) == ["", "limit", "limit"]

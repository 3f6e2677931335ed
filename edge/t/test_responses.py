"""What the edge answers besides a plain redirect: `/`, unknown and malformed
slugs, its own paths, and a Location nothing can be smuggled into."""

import time
import uuid

from edge_helpers import metrics, publish, raw_request


def test_redirect_headers_and_body(edge, rds):
    slug = "p" + uuid.uuid4().hex[:10]
    publish(rds, slug, "https://example.com/landing")
    response = edge.request(f"/{slug}")
    assert response.status == 302
    assert response.headers["Location"] == "https://example.com/landing"
    assert response.headers["Cache-Control"] == "private, no-store"
    assert response.headers["Content-Type"].startswith("text/html")
    assert b"<html>" in response.body and len(response.body) < 300


def test_root_and_unknown_slugs_answer_the_products_404_page_by_default(edge):
    for path in ("/", "/nope-" + uuid.uuid4().hex[:8], "/not.a.slug"):
        response = edge.request(path)
        assert response.status == 404, path
        assert b"<title>Link not found</title>" in response.body and b"There is no short link" in response.body
        assert b"<a " not in response.body  # no home page to offer: EDGE_ROOT_URL is not set
        assert len(response.body) < 2000
        assert response.headers["Cache-Control"] == "private, no-store"
        assert response.headers["Content-Type"].startswith("text/html")
        assert response.headers["Content-Language"] == "en"
        assert response.headers["Content-Length"] == str(len(response.body))  # not chunked
        # The password page's CSP, whose one style hash is this page's style too.
        assert response.headers["Content-Security-Policy"].startswith("default-src 'none'; style-src 'sha256-")


def test_the_pages_speak_the_visitors_language(edge, rds):
    expired = "e" + uuid.uuid4().hex[:10]
    publish(rds, expired, expires_at=int(time.time()) - 5)
    cases = [
        ("/nope-" + uuid.uuid4().hex[:8], "de-AT,de;q=0.9,en;q=0.5", 404, "de", "Link nicht gefunden"),
        ("/nope-" + uuid.uuid4().hex[:8], "it, fr;q=0.8", 404, "fr", "Lien introuvable"),
        (f"/{expired}", "es-MX", 410, "es", "Enlace caducado"),
        (f"/{expired}", "ja, *;q=0.1", 410, "en", "Link expired"),
    ]
    for path, accept, status, lang, title in cases:
        response = edge.request(path, headers={"Accept-Language": accept})
        assert response.status == status, accept
        assert response.headers["Content-Language"] == lang, accept
        assert f'<html lang="{lang}">'.encode() in response.body
        assert f"<title>{title}</title>".encode() in response.body, accept


def test_a_used_up_link_says_so(edge, rds):
    slug = "u" + uuid.uuid4().hex[:10]
    publish(rds, slug, max_visits=1)
    assert edge.request(f"/{slug}").status == 302
    response = edge.request(f"/{slug}")
    assert response.status == 410 and b"<title>Link used up</title>" in response.body


def test_root_and_not_found_redirects(make_edge, private_redis):
    """On a Redis of its own: a default domain another test published for
    this host (under another EDGE_BASE_URL) would stand in for the edge's."""
    edge = make_edge(
        env={
            **private_redis.edge_env(),
            "EDGE_ROOT_URL": "https://www.example.com/",
            "EDGE_NOT_FOUND_URL": "https://www.example.com/missing",
        },
        patient_redis=True,
    )
    rds = private_redis.client()
    disabled = "n" + uuid.uuid4().hex[:10]
    expired = "e" + uuid.uuid4().hex[:10]
    publish(rds, disabled, active=False)
    publish(rds, expired, expires_at=int(time.time()) - 5)
    root = edge.request("/")
    assert (root.status, root.headers["Location"]) == (302, "https://www.example.com/")
    for path in ("/unknown-" + uuid.uuid4().hex[:8], "/bad.shape", f"/{disabled}"):
        response = edge.request(path)
        assert (response.status, response.headers["Location"]) == (302, "https://www.example.com/missing"), path
    # An expired link is a 410, whose page offers the not-found redirect and the home page.
    gone = edge.request(f"/{expired}")
    assert gone.status == 410 and b"<title>Link expired</title>" in gone.body
    assert b'<a href="https://www.example.com/missing">Continue</a>' in gone.body
    assert b'<a href="https://www.example.com/">Home page</a>' in gone.body


def test_slug_shape_is_configurable(make_edge, rds):
    edge = make_edge(
        env={
            "EDGE_SLUG_ALPHABET": "a-z0-9.",
            "EDGE_SLUG_MIN_LENGTH": "3",
            "EDGE_SLUG_MAX_LENGTH": "12",
        }
    )
    slug = "v1.x" + uuid.uuid4().hex[:6]
    publish(rds, slug)
    before = metrics(edge)
    assert edge.request(f"/{slug}").status == 302
    for path in ("/ab", "/" + "a" * 13, "/ABC", "/a_b"):
        assert edge.request(path).status == 404, path
    after = metrics(edge)
    key = 'slingshot_edge_requests_total{outcome="invalid_slug"}'
    assert after[key] - before[key] == 4
    assert after["slingshot_edge_redis_lookups_total"] - before["slingshot_edge_redis_lookups_total"] == 1


def test_forwarded_query_cannot_add_headers(edge, rds):
    slug = "i" + uuid.uuid4().hex[:10]
    publish(rds, slug, "https://example.com/p", forward_query=True)
    answer = raw_request(edge.port, f'/{slug}?a=%0d%0aX-Evil:%201&b=\xff\xc3"<'.encode("latin-1"))
    head = answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    assert head[0] == b"HTTP/1.1 302 Moved Temporarily"
    assert b'Location: https://example.com/p?a=%0d%0aX-Evil:%201&b=%FF%C3"<' in head
    assert not any(line.lower().startswith(b"x-evil") for line in head)


def test_metrics_are_prometheus_text(edge):
    edge.request("/nothing-" + uuid.uuid4().hex[:8])
    response = edge.request("/metrics")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = response.body.decode()
    for family in (
        "slingshot_edge_requests_total",
        "slingshot_edge_cache_hits_total",
        "slingshot_edge_cache_misses_total",
        "slingshot_edge_cache_negative_hits_total",
        "slingshot_edge_redis_errors_total",
        "slingshot_edge_clicks_buffered_total",
        "slingshot_edge_clicks_flushed_total",
        "slingshot_edge_clicks_dropped_total",
        "slingshot_edge_click_buffer_depth",
    ):
        assert f"# TYPE {family} " in text, family
    assert 'slingshot_edge_requests_total{outcome="not_found"} ' in text
    values = metrics(edge)
    assert values['slingshot_edge_requests_total{outcome="not_found"}'] >= 1


def test_metrics_only_for_allowed_addresses(make_edge):
    edge = make_edge(env={"EDGE_METRICS_ALLOW": "10.0.0.0/8, ::1"})
    response = edge.request("/metrics")
    assert response.status == 403
    assert b"slingshot_" not in response.body

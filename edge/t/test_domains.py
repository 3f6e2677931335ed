"""Several domains on one edge, published by the dashboard: a slug per
domain, the request's Host choosing, an unknown Host served as the default
domain, each domain's own redirects and robots.txt."""

import uuid

import pytest
from edge_helpers import following, metrics, publish, wait_for_clicks, wait_until

from links import domains, services
from slingshot.contract import DOMAINS_KEY, LINK_CHANGES_STREAM
from slingshot.redis import get_redis
from testing.factories import make_link

pytestmark = pytest.mark.django_db(transaction=True)


def get(edge, path: str, host: str):
    return edge.request(path, headers={"Host": host})


def served(edge, path: str, host: str, location: str) -> bool:
    response = get(edge, path, host)
    return response.status in (301, 302) and response.headers["Location"] == location


def settled(edge, check, what: str) -> None:
    """Waits until `check` holds on every worker: each request is a new
    connection, and a worker sees a change within its own tick."""
    wait_until(lambda: all(check() for _ in range(4 * edge.workers)), what=what)


def test_the_same_slug_on_two_domains_goes_to_two_targets(edge, owner, two_domains):
    go, to = two_domains
    slug = "d" + uuid.uuid4().hex[:8]
    make_link(owner=owner, url="https://example.com/go", slug=slug, domain=go)
    make_link(owner=owner, url="https://example.com/to", slug=slug, domain=to)
    make_link(owner=owner, url="https://example.com/default", slug=slug)
    settled(edge, lambda: served(edge, f"/{slug}", go.host, "https://example.com/go"), "the first domain served")
    settled(edge, lambda: served(edge, f"/{slug}", to.host, "https://example.com/to"), "the second domain served")
    # Host as browsers send it: any case, a port, a trailing dot.
    assert served(edge, f"/{slug}", go.host.upper() + ".:8443", "https://example.com/go")
    # A host the edge does not know is the default domain.
    assert served(edge, f"/{slug}", "unknown.example.net", "https://example.com/default")
    assert served(edge, f"/{slug}", "127.0.0.1", "https://example.com/default")


def test_a_link_is_served_on_its_own_domain_only(edge, owner, two_domains):
    go, to = two_domains
    slug = "o" + uuid.uuid4().hex[:8]
    link = make_link(owner=owner, url="https://example.com/only", slug=slug, domain=go)
    settled(edge, lambda: served(edge, f"/{slug}", go.host, "https://example.com/only"), "the link served")
    assert get(edge, f"/{slug}", to.host).status == 404
    assert get(edge, f"/{slug}", "127.0.0.1").status == 404
    services.link_update(link=link, domain=to)
    settled(edge, lambda: served(edge, f"/{slug}", to.host, "https://example.com/only"), "the moved link served")
    settled(edge, lambda: get(edge, f"/{slug}", go.host).status == 404, "the old domain's key gone")


def test_an_orphan_visit_records_the_host_of_its_domain(edge, owner, two_domains, rds):
    go, to = two_domains
    slug = "v" + uuid.uuid4().hex[:8]
    make_link(owner=owner, url="https://example.com/to", slug=slug + "x", domain=to)
    settled(edge, lambda: served(edge, f"/{slug}x", to.host, "https://example.com/to"), "the link served")
    # The same path, asked for on a domain that has no link of it (nor ever had).
    assert get(edge, f"/{slug}", go.host).status == 404
    assert get(edge, f"/{slug}", "unknown.example.net").status == 404  # the default domain's
    found = [click for click in wait_for_clicks(rds, slug, 2) if click.get("orphan")]
    # Two workers may flush them in either order.
    assert sorted((click["kind"], click["domain"]) for click in found) == [("unknown", ""), ("unknown", go.host)]


def test_each_domain_has_its_own_root_and_not_found_redirects(edge, owner, two_domains):
    go, to = two_domains
    domains.domain_update(domain=go, root_url="https://www.example.com/", not_found_url="https://www.example.com/404")
    settled(edge, lambda: served(edge, "/", go.host, "https://www.example.com/"), "the root redirect")
    assert served(edge, "/nope-" + uuid.uuid4().hex[:6], go.host, "https://www.example.com/404")
    assert served(edge, "/not.a.slug", go.host, "https://www.example.com/404")
    assert get(edge, "/", to.host).status == 404
    assert get(edge, "/nope", to.host).status == 404
    assert get(edge, "/", "127.0.0.1").status == 404


def test_robots_txt_allows_each_domains_crawlable_links_only(edge, owner, two_domains):
    go, to = two_domains
    crawl, hidden = "c" + uuid.uuid4().hex[:8], "h" + uuid.uuid4().hex[:8]
    link = make_link(owner=owner, url="https://example.com/c", slug=crawl, domain=go, crawlable=True)
    make_link(owner=owner, url="https://example.com/h", slug=hidden, domain=go)
    expected = f"User-agent: *\nAllow: /{crawl}$\nDisallow: /\n".encode()
    settled(edge, lambda: get(edge, "/robots.txt", go.host).body == expected, "the robots.txt")
    response = get(edge, "/robots.txt", go.host)
    assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
    assert get(edge, "/robots.txt", to.host).body == b"User-agent: *\nDisallow: /\n"
    services.link_update(link=link, crawlable=False)
    settled(edge, lambda: get(edge, "/robots.txt", go.host).body == b"User-agent: *\nDisallow: /\n", "robots.txt")


def test_each_domain_has_its_own_not_found_page(edge, owner, two_domains):
    go, to = two_domains
    domains.domain_update(domain=go, root_url="https://go.example.org/")
    missing = "/m" + uuid.uuid4().hex[:8]
    home = b'<a href="https://go.example.org/">Home page</a>'
    settled(edge, lambda: home in get(edge, missing, go.host).body, "the domain's page with its home page")
    page = get(edge, missing, go.host)
    assert page.status == 404 and b"<title>Link not found</title>" in page.body
    other = get(edge, missing, to.host)
    assert other.status == 404 and b"<title>Link not found</title>" in other.body and home not in other.body
    # A not-found redirect set: a redirect, no page.
    domains.domain_update(domain=to, not_found_url="https://to.example.org/missing")
    settled(edge, lambda: served(edge, missing, to.host, "https://to.example.org/missing"), "the redirect")


def test_a_removed_domain_is_gone_from_redis_and_served_as_the_default(edge, owner):
    domain = domains.domain_create(host=f"gone-{uuid.uuid4().hex[:6]}.example.com")
    assert get_redis().hexists(DOMAINS_KEY, domain.host)
    link = make_link(owner=owner, url="https://example.com/", slug="g" + uuid.uuid4().hex[:8], domain=domain)
    with pytest.raises(domains.DomainInUse):
        domains.domain_delete(domain=domain)
    services.link_delete(link=link)
    domains.domain_delete(domain=domain)
    assert not get_redis().hexists(DOMAINS_KEY, domain.host)


def test_a_broken_domains_entry_is_logged_and_the_links_cache_stays(make_edge, private_redis):
    edge = make_edge(workers=1, env=private_redis.edge_env())
    rds = private_redis.client()
    slug = "b" + uuid.uuid4().hex[:8]
    publish(rds, slug, "https://example.com/kept")
    following(edge, rds)  # the link's own change notification read: it evicts nothing more
    assert edge.request(f"/{slug}").status == 302
    lookups = metrics(edge).get("slingshot_edge_redis_lookups_total", 0)
    rds.set(DOMAINS_KEY, "not a hash")
    rds.xadd(LINK_CHANGES_STREAM, {"domain": "go.example.com"})  # the domains are read again
    wait_until(lambda: "domains: redis hgetall" in edge.errors(), what="the broken entry logged")
    assert edge.request(f"/{slug}").headers["Location"] == "https://example.com/kept"
    assert metrics(edge).get("slingshot_edge_redis_lookups_total", 0) == lookups  # served from the cache
    assert metrics(edge).get('slingshot_edge_redis_errors_total{op="changes"}', 0) == 0


AASA = {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/*"}]}]}}
ASSETLINKS = [
    {
        "relation": ["delegate_permission/common.handle_all_urls"],
        "target": {
            "namespace": "android_app",
            "package_name": "com.example.app",
            "sha256_cert_fingerprints": [":".join(["AB"] * 32)],
        },
    }
]


def test_each_domain_serves_its_own_app_link_files_as_json(edge, two_domains):
    """/.well-known/apple-app-site-association and assetlinks.json: what the
    domain's page set, as JSON, on that domain only; a 404 where none is
    set; gone from every worker once the domain drops it."""
    import json

    go, to = two_domains
    domains.domain_update(domain=go, apple_app_site_association=AASA, assetlinks=ASSETLINKS)
    for path, value in (
        ("/.well-known/apple-app-site-association", AASA),
        ("/.well-known/assetlinks.json", ASSETLINKS),
    ):
        settled(edge, lambda path=path: get(edge, path, go.host).status == 200, f"{path} served")
        response = get(edge, path, go.host)
        assert response.headers["Content-Type"] == "application/json" and json.loads(response.body) == value
        assert get(edge, path, to.host).status == 404
    domains.domain_update(domain=go, apple_app_site_association=None)
    settled(edge, lambda: get(edge, "/.well-known/apple-app-site-association", go.host).status == 404, "the file gone")
    assert get(edge, "/.well-known/assetlinks.json", go.host).status == 200


def test_a_domains_expired_redirect_catches_its_expired_links_unless_a_link_has_its_own(edge, owner, two_domains):
    from datetime import timedelta

    from django.utils import timezone

    go, to = two_domains
    past = timezone.now() - timedelta(days=1)
    own = make_link(
        owner=owner, url="https://example.com/a", domain=go, expires_at=past, expired_url="https://example.com/own"
    )
    other = make_link(owner=owner, url="https://example.com/b", domain=go, expires_at=past)
    elsewhere = make_link(owner=owner, url="https://example.com/c", domain=to, expires_at=past)
    domains.domain_update(domain=go, expired_url="https://go.example.org/expired")
    settled(edge, lambda: served(edge, f"/{other.slug}", go.host, "https://go.example.org/expired"), "the domain's")
    assert served(edge, f"/{own.slug}", go.host, "https://example.com/own")
    assert get(edge, f"/{elsewhere.slug}", to.host).status == 410

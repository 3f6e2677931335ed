"""The YOURLS API on a short domain (nginx.conf's /yourls-api.php): the
edge passes it to the dashboard under gunicorn with the edges' secret, the
visitor's address and the host asked for, and the link is made on that
domain and served by the edge; nowhere while no dashboard is set."""

import time

import pytest
import requests
from django.core.management import call_command
from edge_helpers import wait_until
from yourls import YOURLSClient

from links.models import Link
from slingshot.redis import get_redis
from tokens.services import token_create
from tokens.signatures import token_signature

pytestmark = pytest.mark.django_db(transaction=True)

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


@pytest.fixture
def yourls_edge(make_dashboard, make_edge):
    port = make_dashboard()
    return make_edge(env={"EDGE_DASHBOARD_URL": f"http://127.0.0.1:{port}"})


def test_sharex_on_a_short_domain_makes_a_link_the_edge_serves(yourls_edge, owner, two_domains, empty_streams):
    go, _ = two_domains
    token, raw = token_create(user=owner, name="sharex", scope="write")
    api = f"{yourls_edge.url}/yourls-api.php"
    fields = {"signature": raw, "action": "shorturl", "url": "https://example.com/shot.png", "format": "simple"}
    sharex = requests.post(api, files={k: (None, v) for k, v in fields.items()}, headers={"Host": go.host}, timeout=10)
    link = Link.objects.get(url="https://example.com/shot.png")
    assert (sharex.status_code, sharex.text) == (200, link.short_url)
    assert link.domain == go and link.team_id == token.team_id

    def visit():
        return requests.get(
            f"{yourls_edge.url}/{link.slug}",
            headers={"Host": go.host, "User-Agent": FIREFOX},
            allow_redirects=False,
            timeout=10,
        )

    wait_until(lambda: visit().status_code == 302, what="the new link served on its domain")
    assert visit().headers["Location"] == "https://example.com/shot.png"
    # Its clicks, once imported, are the API's: the yourls client asks through the edge too.
    time.sleep(0.3)  # the edge's journal flush (EDGE_CLICK_FLUSH_INTERVAL is 0.05 s in tests)
    call_command("import_clicks", "--once", "--consumer", "yourls-edge-test")
    client = YOURLSClient(api, signature=token_signature(token))
    assert client.url_stats(link.short_url).clicks >= 2
    # On the default domain's host, the default domain's links.
    assert (
        YOURLSClient(api, signature=raw)
        .shorten("https://example.com/plain")
        .shorturl.startswith(Link.objects.get(url="https://example.com/plain").domain.base_url())
    )
    assert Link.objects.get(url="https://example.com/plain").domain.is_default


def test_the_dashboard_counts_the_visitor_not_the_edge(yourls_edge):
    visitor = "203.0.113.77"  # the tests' edges believe X-Forwarded-For from 127.0.0.0/8 (its realip)
    keys = f"slingshot:throttle:addr-{visitor}:*"
    get_redis().delete(*get_redis().keys(keys) or ["none"])
    refused = requests.get(
        f"{yourls_edge.url}/yourls-api.php",
        params={"action": "version", "signature": "0123456789abcdef0123456789abcdef", "format": "json"},
        headers={"X-Forwarded-For": visitor, "Cookie": "sessionid=x"},
        timeout=10,
    )
    assert (refused.status_code, refused.json()["message"]) == (403, "Please log in")
    assert refused.headers["Cache-Control"] == "private, no-store"
    assert get_redis().keys(keys)


def test_without_a_dashboard_the_edge_answers_404(edge):
    assert edge.request("/yourls-api.php?action=version").status == 404
    assert not edge.errors()

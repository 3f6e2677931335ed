"""A short domain's report page (nginx.conf's /report): the edge passes it
to the dashboard under gunicorn, which keeps the report with the link it
names, refuses a post from another site and a visitor past REPORT_RATE;
the edge's pages link to it. Nowhere while no dashboard is set."""

import ipaddress
import itertools
import random
import re

import pytest
import requests

from moderation.models import Report
from testing.factories import make_link

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def report_edge(make_dashboard, make_edge):
    port = make_dashboard({"REPORT_RATE": "3/hour"})
    return make_edge(env={"EDGE_DASHBOARD_URL": f"http://127.0.0.1:{port}"})


# Addresses of 198.18.0.0/15 (set aside for tests), from a random point
# on: each test's own, in this process and, all but surely, in the other
# processes posting to the same Redis's throttle.
_ADDRESSES = itertools.count(random.randrange(1 << 16))


def visitor() -> str:
    """An address of this test's own (the tests' edges believe X-Forwarded-For from 127.0.0.0/8)."""
    return str(ipaddress.IPv4Address("198.18.0.1") + next(_ADDRESSES) % ((1 << 17) - 2))


def post(edge, host: str, fields: dict, **headers) -> requests.Response:
    return requests.post(
        f"{edge.url}/report",
        data=fields,
        headers={"Host": host, "Origin": f"http://{host}", **headers},
        allow_redirects=False,
        timeout=10,
    )


def test_a_visitor_reports_a_short_url_of_a_short_domain(report_edge, owner, two_domains):
    go, _ = two_domains
    link = make_link(owner=owner, url="https://phish.example/login", domain=go)
    address = visitor()
    page = requests.get(
        f"{report_edge.url}/report",
        params={"url": link.short_url},
        headers={"Host": go.host, "X-Forwarded-For": address},
        timeout=10,
    )
    assert page.status_code == 200 and "<h1>Report a link</h1>" in page.text
    assert f'value="{link.short_url}"' in page.text
    assert page.headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert page.headers["Cache-Control"] == "private, no-store"
    sent = post(
        report_edge,
        go.host,
        {"url": link.short_url, "reason": "phishing", "details": "It asks for my bank password."},
        **{"X-Forwarded-For": address, "Sec-Fetch-Site": "same-origin"},
    )
    assert sent.status_code == 200 and "Your report was sent" in sent.text
    report = Report.objects.get(link=link)
    assert (report.host, report.slug, report.reason, report.status) == (go.host, link.slug, "phishing", "open")
    assert report.details == "It asks for my bank password."
    assert report.address == re.sub(r"\.\d+$", ".0", address)  # anonymised, as clicks' are


def test_a_post_from_another_site_is_refused_and_nothing_kept(report_edge, owner, two_domains):
    go, _ = two_domains
    link = make_link(owner=owner, url="https://example.com/x", domain=go)
    fields = {"url": link.short_url, "reason": "spam"}
    for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        refused = post(report_edge, go.host, fields, **{"X-Forwarded-For": visitor(), **headers})
        assert refused.status_code == 403 and "only be sent from this site" in refused.text
    assert not Report.objects.exists()


def test_a_wrong_short_url_is_said_and_the_address_is_throttled(report_edge, owner, two_domains):
    go, _ = two_domains
    link = make_link(owner=owner, url="https://example.com/y", domain=go)
    address = {"X-Forwarded-For": visitor()}
    unknown = post(report_edge, go.host, {"url": f"http://{go.host}/no-such-{link.slug}", "reason": "spam"}, **address)
    assert unknown.status_code == 400 and "There is no short link at that address." in unknown.text
    elsewhere = post(report_edge, go.host, {"url": "https://elsewhere.example/abc", "reason": "spam"}, **address)
    assert elsewhere.status_code == 400 and "not a short URL of this service" in elsewhere.text
    assert post(report_edge, go.host, {"url": link.short_url, "reason": "spam"}, **address).status_code == 200
    throttled = post(report_edge, go.host, {"url": link.short_url, "reason": "spam"}, **address)
    assert throttled.status_code == 429 and int(throttled.headers["Retry-After"]) > 0
    assert Report.objects.count() == 1
    # Another visitor is not held by the first one's posts.
    assert post(report_edge, go.host, {"url": link.short_url, "reason": "other"}, **{"X-Forwarded-For": visitor()}).ok


def test_the_edges_pages_link_to_it_only_where_a_dashboard_takes_reports(report_edge, edge):
    assert 'href="/report"' in report_edge.request("/no-such-link-here").body.decode()
    assert 'href="/report"' not in edge.request("/no-such-link-here").body.decode()
    assert edge.request("/report").status == 404


def test_what_a_visitor_types_past_its_bounds_is_said_not_a_500(report_edge, owner, two_domains):
    go, _ = two_domains
    link = make_link(owner=owner, url="https://example.com/z", domain=go)
    cases = (
        {"email": "a" * 250 + "@example.com"},
        {"details": "x" * 2001},
        {"reason": "other\x00"},
        {"url": link.short_url + "\x00"},
    )
    for extra in cases:
        fields = {"url": link.short_url, "reason": "spam", **extra}
        answer = post(report_edge, go.host, fields, **{"X-Forwarded-For": visitor()})
        assert answer.status_code == 400, (extra, answer.status_code)
        assert 'class="errorlist' in answer.text
    assert not Report.objects.exists()

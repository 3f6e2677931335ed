"""A link published by the dashboard is read correctly by the edge (docs/contract.md)."""
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from links import services
from slingshot.contract import link_key
from links.redis import get_redis

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner():
    return get_user_model().objects.create_user("contract-" + uuid.uuid4().hex[:8])


def create(owner, **fields):
    return services.link_create(owner=owner, slug="c" + uuid.uuid4().hex[:12], **fields)


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirect_status_per_link(edge, owner, status):
    link = create(owner, url="https://example.com/s", redirect_status=status)
    response = edge.request(f"/{link.slug}")
    assert response.status == status
    assert response.headers["Location"] == "https://example.com/s"
    assert response.headers["Cache-Control"] == "private, no-store"


@pytest.mark.parametrize(
    "target, query, expected",
    [
        ("https://example.com/p", "utm=1&x=%20y", "https://example.com/p?utm=1&x=%20y"),
        ("https://example.com/p?a=1", "b=2", "https://example.com/p?a=1&b=2"),
        ("https://example.com/p?a=1#top", "b=2", "https://example.com/p?a=1&b=2#top"),
        ("https://example.com/p", "", "https://example.com/p"),
    ],
)
def test_query_forwarding(edge, owner, target, query, expected):
    link = create(owner, url=target, forward_query=True)
    path = f"/{link.slug}?{query}" if query else f"/{link.slug}"
    assert edge.request(path).headers["Location"] == expected


def test_query_is_not_forwarded_unless_asked(edge, owner):
    link = create(owner, url="https://example.com/p")
    assert edge.request(f"/{link.slug}?utm=1").headers["Location"] == "https://example.com/p"


def test_disabled_link_is_404_and_expired_link_is_410(edge, owner):
    disabled = create(owner, url="https://example.com/", is_active=False)
    expired = create(owner, url="https://example.com/", expires_at=timezone.now() - timedelta(seconds=1))
    later = create(owner, url="https://example.com/later", expires_at=timezone.now() + timedelta(days=1))
    assert edge.request(f"/{disabled.slug}").status == 404
    assert edge.request(f"/{expired.slug}").status == 410
    assert edge.request(f"/{later.slug}").status == 302


def test_unknown_and_malformed_slugs_are_404(edge):
    assert edge.request("/no-such-" + uuid.uuid4().hex[:8]).status == 404
    for path in ["/", "/a/b", "/semi;colon", "/" + "x" * 65, "/%E2%9C%93", "/a%2Fb"]:
        assert edge.request(path).status == 404, path
    # nginx's own parser refuses an encoded NUL before Lua runs.
    assert edge.request("/%00").status == 400


def test_a_value_that_breaks_the_contract_is_answered_as_unknown(make_edge):
    edge = make_edge()  # its own, since it logs the refusal as an error
    slug = "bad" + uuid.uuid4().hex[:8]
    get_redis().set(link_key(slug), '{"id": 1, "url": "javascript:alert(1)"}')
    assert edge.request(f"/{slug}").status == 404
    assert "link url is missing or unsafe" in edge.errors()


def test_healthz_reports_redis(edge):
    response = edge.request("/healthz")
    assert response.status == 200
    assert response.body.strip() == b"ok"
    assert edge.errors() == ""

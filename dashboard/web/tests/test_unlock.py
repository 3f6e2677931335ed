"""Links with a password: the edge sends their visitors to the unlock page,
which lets the right password through with exactly one click, refuses the
wrong ones, and locks out an address after too many."""

from urllib.parse import urlsplit

import pytest
from django.test import Client

from clicks.tests.streams import empty_streams  # noqa: F401 (a fixture)
from links.redis import get_redis
from links.services import link_create, link_update
from slingshot.contract import CLICKS_STREAM

from .conftest import FIREFOX, unique_slug

pytestmark = pytest.mark.django_db(transaction=True)


def stream_clicks() -> list[bytes]:
    return [fields[b"clicks"] for _, fields in get_redis().xrange(CLICKS_STREAM)]


def unlock_path(edge, slug: str) -> str:
    """Where the edge sends a visitor of the slug."""
    response = edge.request(f"/{slug}")
    assert response.status == 302
    return urlsplit(response.headers["Location"]).path


@pytest.fixture
def visitor():
    return Client(HTTP_USER_AGENT=FIREFOX, REMOTE_ADDR="203.0.113.50")


def test_the_right_password_redirects_and_records_one_click(edge, user, visitor, settings):
    link = link_create(owner=user, url="https://example.com/secret", slug=unique_slug(), password="hunter2")
    path = unlock_path(edge, link.slug)
    assert path == f"/unlock/{link.pk}/"
    page = visitor.get(path)
    assert page.status_code == 200 and b'type="password"' in page.content
    assert stream_clicks() == []
    response = visitor.post(path, {"password": "hunter2"}, HTTP_REFERER="https://news.example.org/")
    assert (response.status_code, response["Location"]) == (302, "https://example.com/secret")
    (payload,) = stream_clicks()
    lines = payload.decode().split("\n")
    # Record format 5: slug, link, rule (none: the link's own url), time, address, User-Agent, Referer.
    assert lines[2:6] == [link.slug, str(link.pk), "", lines[5]] and lines[6:9] == [
        "203.0.113.50",
        FIREFOX,
        "https://news.example.org/",
    ]


def test_wrong_passwords_are_refused_then_locked_out_per_link_and_address(user, visitor, settings):
    settings.LINK_UNLOCK_FAILURE_LIMIT = 3
    link = link_create(owner=user, url="https://example.com/s", slug=unique_slug(), password="right")
    other = link_create(owner=user, url="https://example.com/o", slug=unique_slug(), password="right")
    path = f"/unlock/{link.pk}/"
    for _ in range(3):
        response = visitor.post(path, {"password": "wrong"})
        assert response.status_code == 403 and b"not the password" in response.content
    locked = visitor.post(path, {"password": "right"})
    assert locked.status_code == 429 and b"Too many" in locked.content
    elsewhere = Client(REMOTE_ADDR="198.51.100.9").post(path, {"password": "right"})
    assert elsewhere.status_code == 302
    assert visitor.post(f"/unlock/{other.pk}/", {"password": "right"}).status_code == 302
    assert len(stream_clicks()) == 2


def test_the_unlock_page_keeps_the_links_limits(user, visitor):
    link = link_create(owner=user, url="https://example.com/l", slug=unique_slug(), password="p", max_visits=1)
    assert visitor.post(f"/unlock/{link.pk}/", {"password": "p"}).status_code == 302
    assert visitor.post(f"/unlock/{link.pk}/", {"password": "p"}).status_code == 410
    link_update(link=link, is_active=False)
    assert visitor.post(f"/unlock/{link.pk}/", {"password": "p"}).status_code == 404
    plain = link_create(owner=user, url="https://example.com/n", slug=unique_slug())
    assert visitor.get(f"/unlock/{plain.pk}/").status_code == 404
    assert len(stream_clicks()) == 1

"""What the edges ask the dashboard: the password check, for callers with
the edge's secret only, answered before the host and HTTPS checks that
people's requests go through."""

import json

import pytest
from django.test import Client

from links import unlocking
from slingshot.redis import get_redis
from testing.factories import fresh, make_link

pytestmark = pytest.mark.django_db(transaction=True)

PATH = "/internal/link-password"


def ask(body, *, secret: str | None, host: str = "dashboard:8000", **headers):
    if secret is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {secret}"
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Client(HTTP_HOST=host).post(PATH, raw, content_type="application/json", **headers)


def test_an_edge_learns_whether_a_password_is_right(user, settings):
    settings.EDGE_DASHBOARD_SECRET = "s3cret-of-the-edges"
    settings.HTTPS_ONLY = settings.SECURE_SSL_REDIRECT = True  # the edge calls over the internal network's HTTP
    link = make_link(owner=user, url="https://example.com/", slug=fresh(), password="right")
    get_redis().delete(*unlocking.failure_keys(link.pk, "203.0.113.7"))
    check = {"link": link.pk, "password": "right", "address": "203.0.113.7"}
    assert ask(check, secret="s3cret-of-the-edges").json() == {"outcome": "right"}
    assert ask({**check, "password": "wrong"}, secret="s3cret-of-the-edges").json() == {"outcome": "wrong"}
    assert ask({**check, "link": 2**40}, secret="s3cret-of-the-edges").json() == {"outcome": "wrong"}


def test_a_typed_password_that_is_not_utf8_is_a_wrong_one(user, settings):
    """The edge passes the bytes typed as they are; json.loads reads the
    bytes of a lone surrogate (ED A0 80) as one, as it does the escape."""
    settings.EDGE_DASHBOARD_SECRET = "s3cret-of-the-edges"
    link = make_link(owner=user, url="https://example.com/", slug=fresh(), password="right")
    get_redis().delete(*unlocking.failure_keys(link.pk, "203.0.113.7"))
    for body in (
        b'{"link": %d, "password": "right\xed\xa0\x80", "address": "203.0.113.7"}' % link.pk,
        json.dumps({"link": link.pk, "password": "\udfff", "address": "203.0.113.7"}).encode(),
    ):
        response = ask(body, secret="s3cret-of-the-edges")
        assert response.status_code == 200 and response.json() == {"outcome": "wrong"}, body
    assert int(get_redis().get(unlocking.failure_keys(link.pk, "203.0.113.7")[0])) == 2
    surrogate_address = json.dumps({"link": link.pk, "password": "right", "address": "203.0.113.7\udfff"})
    assert ask(surrogate_address.encode(), secret="s3cret-of-the-edges").status_code == 400


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"not json", 400),
        ([1, 2], 400),
        ({"link": "1", "password": "x", "address": "a"}, 400),
        ({"link": True, "password": "x", "address": "a"}, 400),
        ({"link": 1, "password": None, "address": "a"}, 400),
        ({"link": 1, "password": "x" * 5000, "address": "a"}, 413),
    ],
)
def test_a_check_that_is_not_one_is_refused_clearly(settings, body, status):
    settings.EDGE_DASHBOARD_SECRET = "s3cret-of-the-edges"
    response = ask(body, secret="s3cret-of-the-edges")
    assert response.status_code == status and response.json()["error"]


def test_nobody_but_an_edge_asks(settings):
    check = {"link": 1, "password": "x", "address": "203.0.113.7"}
    settings.EDGE_DASHBOARD_SECRET = ""
    assert ask(check, secret="").status_code == 503  # no secret set: nothing is checked
    settings.EDGE_DASHBOARD_SECRET = "s3cret-of-the-edges"
    for secret in (None, "", "s3cret-of-the-edge", "s3cret-of-the-edges "):
        assert ask(check, secret=secret).status_code == 401, secret
    assert Client().get(PATH, HTTP_AUTHORIZATION="Bearer s3cret-of-the-edges").status_code == 405

"""The link options of the API: description, valid_since, max_visits,
crawlable, a write-only password, and the state they add up to."""

import json
import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.hashers import check_password
from django.utils import timezone

from links.models import Link
from slingshot.contract import link_key, visits_key
from slingshot.redis import get_redis
from testing.factories import fresh

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_option_round_trips_and_reaches_redis(api):
    slug = fresh()
    since = timezone.now() + timedelta(days=1)
    body = {
        "url": "https://example.com/o",
        "slug": slug,
        "description": "Launch link.\nSecond line.",
        "valid_since": since.isoformat(),
        "expires_at": (since + timedelta(days=7)).isoformat(),
        "max_visits": 100,
        "crawlable": True,
        "password": "open sesame",
    }
    response = api.post("/api/v1/links", body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert "password" not in created and created["has_password"] is True
    assert created["description"] == body["description"] and created["max_visits"] == 100
    assert created["crawlable"] is True and created["state"] == "scheduled"
    link = Link.objects.get(slug=slug)
    assert link.password != "open sesame" and check_password("open sesame", link.password)
    published = get_redis().get(link_key(slug)).decode()
    assert "open sesame" not in published and link.password not in published
    # Nor its hash: what passes through it are bound to is an HMAC of the hash.
    version = json.loads(published)["password_version"]
    assert re.fullmatch(r"[0-9a-f]{32}", version) and version not in link.password
    # Edges ask for the password themselves; older ones are sent to a page
    # that names no link (docs/contract.md, "Upgrading").
    assert '"password":true' in published and f'"unlock_url":"{settings.DASHBOARD_BASE_URL}/unlock/"' in published
    assert '"max_visits":100' in published and f'"valid_since":{int(since.timestamp()) + 1}' in published


def test_password_is_write_only_and_can_be_removed(api):
    slug = fresh()
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, "password": "x"}, format="json")
    assert api.get(f"/api/v1/links/{slug}").json()["has_password"] is True
    changed = api.patch(f"/api/v1/links/{slug}", {"password": None}, format="json").json()
    assert changed["has_password"] is False and "password" not in changed
    assert Link.objects.get(slug=slug).password == ""
    value = json.loads(get_redis().get(link_key(slug)))
    assert (value["password"], value["password_version"], value["unlock_url"]) == (False, None, None)


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"max_visits": 0}, "max_visits"),
        ({"max_visits": "5"}, "max_visits"),
        ({"crawlable": "yes"}, "crawlable"),
        ({"valid_since": "2031-01-02T00:00:00Z", "expires_at": "2031-01-01T00:00:00Z"}, "expires_at"),
        ({"password": "x" * 129}, "password"),
        ({"description": "x" * 2001}, "description"),
        ({"domain_of_origin": "x"}, "domain_of_origin"),
    ],
)
def test_invalid_options_are_a_400_naming_the_field(api, fields, field):
    response = api.post("/api/v1/links", {"url": "https://example.com/", **fields}, format="json")
    assert response.status_code == 400 and field in response.json(), response.content


def test_state_counts_the_visits_the_edge_served(api):
    slug = fresh()
    link_id = api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, "max_visits": 2}, format="json")
    assert link_id.json()["state"] == "active"
    pk = Link.objects.get(slug=slug).pk
    get_redis().set(visits_key(pk), 2)
    assert api.get(f"/api/v1/links/{slug}").json()["state"] == "limit reached"
    listed = {item["slug"]: item["state"] for item in api.get("/api/v1/links").json()["results"]}
    assert listed[slug] == "limit reached"
    get_redis().delete(visits_key(pk))


def test_tags_filter_ignores_case(api):
    slug = fresh()
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, "tags": ["Spring"]}, format="json")
    for tag in ("spring", "SPRING", "Spring"):
        slugs = [item["slug"] for item in api.get("/api/v1/links", {"tag": tag}).json()["results"]]
        assert slug in slugs, tag
    assert slug not in [item["slug"] for item in api.get("/api/v1/links", {"tag": "sprin"}).json()["results"]]

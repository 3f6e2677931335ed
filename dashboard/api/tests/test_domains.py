"""Domains in the API: staff add, change and remove them; everyone signed
in reads them; a link names its domain, and a slug is unique per domain."""

import uuid

import orjson
import pytest

from links.models import Domain
from links.validation import default_host
from slingshot.contract import DOMAINS_KEY, link_key, robots_key
from slingshot.redis import get_redis
from testing.factories import fresh

pytestmark = pytest.mark.django_db(transaction=True)


def new_host(name="go"):
    return f"{name}-{uuid.uuid4().hex[:6]}.example.com"


@pytest.fixture
def staff_api(client_for, make_user):
    return client_for(make_user(is_staff=True))


def test_staff_add_list_change_and_remove_a_domain(staff_api):
    host = new_host()
    response = staff_api.post("/api/v1/domains", {"host": host.upper() + "."}, format="json")
    assert response.status_code == 201, response.content
    assert response.json() | {"created_at": None} == {
        "host": host,
        "root_url": "",
        "not_found_url": "",
        "expired_url": "",
        "https_redirect": False,
        "apple_app_site_association": None,
        "assetlinks": None,
        "is_default": False,
        "link_count": 0,
        "created_at": None,
    }
    assert orjson.loads(get_redis().hget(DOMAINS_KEY, host))["default"] is False
    assert get_redis().get(robots_key(host)) == b"User-agent: *\nDisallow: /\n"
    hosts = [domain["host"] for domain in staff_api.get("/api/v1/domains").json()]
    assert host in hosts and default_host() in hosts

    response = staff_api.patch(
        f"/api/v1/domains/{host}", {"root_url": "HTTPS://www.Example.com", "https_redirect": True}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["root_url"] == "https://www.example.com"
    assert orjson.loads(get_redis().hget(DOMAINS_KEY, host))["root_url"] == "https://www.example.com"

    assert staff_api.post("/api/v1/domains", {"host": host}, format="json").status_code == 409
    assert staff_api.delete(f"/api/v1/domains/{host}").status_code == 204
    assert not Domain.objects.filter(host=host).exists()
    assert get_redis().hget(DOMAINS_KEY, host) is None and get_redis().get(robots_key(host)) is None


@pytest.mark.parametrize(
    "body",
    [
        {"host": "https://go.example.com"},
        {"host": "go.example.com:8443"},
        {"host": "192.0.2.1"},
        {"host": "localhost"},
        {"host": ""},
        {"host": 7},
        {"host": "go.example.com", "root_url": "ftp://example.com/"},
        {"host": "go.example.com", "colour": "red"},
    ],
)
def test_a_bad_domain_is_a_400_saying_why(staff_api, body):
    response = staff_api.post("/api/v1/domains", body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()) & {"host", "root_url", "colour", "non_field_errors", "detail"}


def test_only_staff_change_domains_and_everyone_reads_them(api, staff_api):
    host = new_host()
    assert api.post("/api/v1/domains", {"host": host}, format="json").status_code == 403
    assert staff_api.post("/api/v1/domains", {"host": host}, format="json").status_code == 201
    assert api.get(f"/api/v1/domains/{host}").json()["host"] == host
    assert api.patch(f"/api/v1/domains/{host}", {"https_redirect": True}, format="json").status_code == 403
    assert api.delete(f"/api/v1/domains/{host}").status_code == 403


def test_a_domain_with_links_and_the_default_domain_are_not_removed(api, staff_api):
    host = new_host()
    staff_api.post("/api/v1/domains", {"host": host}, format="json")
    slug = fresh()
    assert api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, "domain": host}, format="json")
    response = staff_api.delete(f"/api/v1/domains/{host}")
    assert response.status_code == 409 and "1 link uses" in response.json()["detail"]
    assert staff_api.delete(f"/api/v1/domains/{default_host()}").status_code == 409


def test_the_same_slug_on_two_domains_and_links_addressed_by_domain(api, staff_api):
    host = new_host()
    staff_api.post("/api/v1/domains", {"host": host}, format="json")
    slug = fresh()
    default = api.post("/api/v1/links", {"url": "https://example.com/d", "slug": slug}, format="json")
    assert default.status_code == 201 and default.json()["domain"] == default_host()
    other = api.post("/api/v1/links", {"url": "https://example.com/o", "slug": slug, "domain": host}, format="json")
    assert other.status_code == 201, other.content
    assert other.json()["domain"] == host
    assert other.json()["short_url"].split("://", 1)[1].startswith(f"{host}")
    assert other.json()["short_url"].endswith(f"/{slug}")
    taken = api.post("/api/v1/links", {"url": "https://example.com/x", "slug": slug, "domain": host}, format="json")
    assert taken.status_code == 409

    assert api.get(f"/api/v1/links/{slug}").json()["url"] == "https://example.com/d"
    assert api.get(f"/api/v1/links/{slug}?domain={host.upper()}").json()["url"] == "https://example.com/o"
    assert api.get(f"/api/v1/links/{slug}?domain=nowhere.example.com").status_code == 404
    assert get_redis().get(link_key(slug)) and get_redis().get(link_key(slug, host))

    changed = api.patch(f"/api/v1/links/{slug}?domain={host}", {"title": "Other"}, format="json")
    assert changed.status_code == 200 and changed.json()["domain"] == host
    assert api.get(f"/api/v1/links/{slug}").json()["title"] == ""
    listed = api.get(f"/api/v1/links?domain={host}").json()["results"]
    assert [(link["slug"], link["domain"]) for link in listed] == [(slug, host)]

    unknown = api.post("/api/v1/links", {"url": "https://example.com/", "domain": "nowhere.example.com"}, format="json")
    assert unknown.status_code == 400 and "No such domain" in unknown.json()["domain"][0]
    assert api.delete(f"/api/v1/links/{slug}?domain={host}").status_code == 204
    assert api.get(f"/api/v1/links/{slug}").status_code == 200
    assert get_redis().get(link_key(slug, host)) is None


def test_a_target_on_any_domain_is_refused_as_a_loop(api, staff_api):
    host = new_host()
    staff_api.post("/api/v1/domains", {"host": host}, format="json")
    response = api.post("/api/v1/links", {"url": f"https://{host}:8443/x"}, format="json")
    assert response.status_code == 400 and "url" in response.json()

"""Every answer of Slingshot's Shlink API held against Shlink's own JSON
Schemas of its objects (shlink_spec/, copied from Shlink's OpenAPI spec),
visits and their deletion included."""

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from rest_framework.test import APIClient

from testing.factories import make_link, make_user

from .shlink import BOT, BROWSER, shlink_client, store_visits

pytestmark = pytest.mark.django_db(transaction=True)
V3 = "/rest/v3"
SPEC = Path(__file__).with_name("shlink_spec")
BASE = "https://shlink.example/definitions/"
REGISTRY = Registry().with_resources(
    (BASE + path.name, Resource.from_contents(json.loads(path.read_text()), default_specification=DRAFT202012))
    for path in SPEC.glob("*.json")
)


def conforms(value, definition: str) -> None:
    validator = Draft202012Validator({"$ref": BASE + definition + ".json"}, registry=REGISTRY)
    errors = [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(value)]
    assert not errors, (definition, errors, value)
    schema = json.loads((SPEC / f"{definition}.json").read_text())
    # What Shlink's objects have, and no more than that (extension members
    # of problem documents aside).
    if definition != "Error" and "properties" in schema and isinstance(value, dict):
        allowed = set(schema["properties"])
        for part in schema.get("allOf", []):
            if "$ref" in part:
                allowed |= set(json.loads((SPEC / part["$ref"].removeprefix("./")).read_text()).get("properties", {}))
        assert set(value) <= allowed, (definition, set(value) - allowed)


def page_of(body: dict, key: str, definition: str) -> list:
    conforms(body[key]["pagination"], "Pagination")
    for item in body[key]["data"]:
        conforms(item, definition)
    return body[key]["data"]


def test_every_answer_is_shaped_as_shlinks_spec_says():
    staff = make_user(is_staff=True)
    client = shlink_client(staff)
    tagged = make_link(owner=staff, url="https://example.com/t", slug="shaped", tags=["shape"], max_visits=9, title="T")
    ruled = client.post(
        f"{V3}/short-urls",
        {"longUrl": "https://example.com/r", "domain": "shapes.example.com", "customSlug": "ruled"},
        format="json",
    )
    conforms(ruled.json(), "ShortUrl")
    store_visits((tagged, BROWSER), (tagged, BOT))
    store_visits(("missing", BROWSER), kind="expired", domain="shapes.example.com")

    conforms(APIClient().get("/rest/health").json(), "Health")
    conforms(client.get(f"{V3}/short-urls/shaped").json(), "ShortUrl")
    conforms(client.patch(f"{V3}/short-urls/shaped", {"title": "U"}, format="json").json(), "ShortUrl")
    assert len(page_of(client.get(f"{V3}/short-urls").json(), "shortUrls", "ShortUrl")) == 2

    visits = page_of(client.get(f"{V3}/short-urls/shaped/visits").json(), "visits", "Visit")
    assert len(visits) == 2 and {visit["potentialBot"] for visit in visits} == {True, False}
    assert visits[0]["redirectUrl"] == "https://example.com/t" and visits[0]["visitedUrl"].endswith("/shaped")
    assert len(page_of(client.get(f"{V3}/tags/shape/visits").json(), "visits", "Visit")) == 2
    assert len(page_of(client.get(f"{V3}/domains/DEFAULT/visits").json(), "visits", "Visit")) == 2
    assert len(page_of(client.get(f"{V3}/visits/non-orphan").json(), "visits", "Visit")) == 2
    orphans = page_of(
        client.get(f"{V3}/visits/orphan", {"domain": "shapes.example.com"}).json(), "visits", "OrphanVisit"
    )
    assert [(o["type"], o["visitedUrl"].rsplit("/", 1)[1]) for o in orphans] == [("invalid_short_url", "missing")]
    assert orphans[0]["visitedUrl"].startswith("http://shapes.example.com")
    conforms(client.get(f"{V3}/visits").json()["visits"], "VisitStats")

    tags = client.get(f"{V3}/tags").json()["tags"]
    conforms(tags["pagination"], "Pagination")
    assert tags["data"] == ["shape"]
    page_of(client.get(f"{V3}/tags/stats").json(), "tags", "TagInfo")
    listed = client.get(f"{V3}/domains").json()["domains"]
    conforms(listed["defaultRedirects"], "NotFoundRedirects")
    for domain in listed["data"]:
        assert set(domain) == {"domain", "isDefault", "redirects"}
        conforms(domain["redirects"], "NotFoundRedirects")
    conforms(
        client.patch(f"{V3}/domains/redirects", {"domain": "shapes.example.com"}, format="json").json(),
        "NotFoundRedirects",
    )

    rules = {
        "redirectRules": [
            {
                "longUrl": "https://example.com/ios",
                "conditions": [{"type": "device", "matchKey": None, "matchValue": "ios"}],
            }
        ]
    }
    for answer in (
        client.post(f"{V3}/short-urls/ruled/redirect-rules?domain=shapes.example.com", rules, format="json"),
        client.get(f"{V3}/short-urls/ruled/redirect-rules", {"domain": "shapes.example.com"}),
    ):
        assert answer.json()["defaultLongUrl"] == "https://example.com/r"
        for rule in answer.json()["redirectRules"]:
            conforms(rule, "ShortUrlRedirectRule")

    for refused in (
        APIClient().get(f"{V3}/tags"),
        client.get(f"{V3}/short-urls/none"),
        client.get(f"{V3}/mercure-info"),
        client.get(f"{V3}/tags/none/visits"),
        client.put(f"{V3}/tags", {}, format="json"),
        client.get("/rest/v3/unknown"),
    ):
        conforms(refused.json(), "Error")

    assert client.delete(f"{V3}/short-urls/shaped/visits").json() == {"deletedVisits": 2}
    assert client.delete(f"{V3}/visits/orphan").json()["deletedVisits"] >= 1
    assert client.get(f"{V3}/short-urls/shaped").json()["visitsSummary"] == {"total": 0, "nonBots": 0, "bots": 0}

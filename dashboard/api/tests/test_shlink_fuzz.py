"""Whatever reaches Shlink's API (api/shlink/), never a 5xx: every route,
with its own parameters and others, values of every JSON type and text
that cannot be stored (NUL, lone surrogates) or seen, drawn by hypothesis;
and every refusal a problem document. Schemathesis is not run against
Shlink's OpenAPI spec: the spec is in many files of Shlink's repository,
loosely typed (numbers where whole numbers are meant) and silent on what
Shlink ignores, so its negative checks would hold Slingshot to rules
Shlink does not have; its object schemas are checked by test_shlink_shapes.py."""

import json
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testing.factories import make_link, make_user

from .shlink import PROBLEM, shlink_client

pytestmark = pytest.mark.django_db

ROUTES = [
    ("GET", "short-urls"),
    ("POST", "short-urls"),
    ("GET", "short-urls/{code}"),
    ("PATCH", "short-urls/{code}"),
    ("DELETE", "short-urls/{code}"),
    ("GET", "short-urls/{code}/visits"),
    ("DELETE", "short-urls/{code}/visits"),
    ("GET", "short-urls/{code}/redirect-rules"),
    ("POST", "short-urls/{code}/redirect-rules"),
    ("GET", "tags"),
    ("PUT", "tags"),
    ("DELETE", "tags"),
    ("GET", "tags/stats"),
    ("GET", "tags/{tag}/visits"),
    ("GET", "visits"),
    ("GET", "visits/orphan"),
    ("DELETE", "visits/orphan"),
    ("GET", "visits/non-orphan"),
    ("GET", "domains"),
    ("PATCH", "domains/redirects"),
    ("GET", "domains/{domain}/visits"),
    ("GET", "mercure-info"),
    ("GET", "health"),
]
QUERY = [
    "page", "itemsPerPage", "searchTerm", "tags[]", "tags", "tagsMode", "excludeTags[]", "excludeTagsMode",
    "orderBy", "startDate", "endDate", "excludeMaxVisitsReached", "excludePastValidUntil", "domain",
    "excludeBots", "type", "apiKeyName",
]  # fmt: skip
BODY = [
    "longUrl", "customSlug", "shortCodeLength", "findIfExists", "domain", "tags", "validSince", "validUntil",
    "maxVisits", "title", "crawlable", "forwardQuery", "pathPrefix", "oldName", "newName", "redirectRules",
    "baseUrlRedirect", "regular404Redirect", "invalidShortUrlRedirect",
]  # fmt: skip
NASTY = [
    "", "\x00", "\ud800", "a\udfffb", "\u3164", "\u200b", "DEFAULT", "fz", "-1", "0", "99999999999999999999",
    "1e309", "true", "all", "visits-DESC", "2030-02-30", "2030-01-01T00:00:00+99:00", "https://example.com/",
    "javascript:alert(1)", "x" * 3000, "go.example.com", "ip-address", "device", "ios", "..", "%", "/",
]  # fmt: skip
text = st.one_of(st.sampled_from(NASTY), st.text(st.characters(exclude_categories=()), max_size=40))
scalar = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=False), text
)
json_value = st.recursive(
    scalar,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(BODY + ["type", "conditions", "matchKey", "matchValue"]) | text, inner, max_size=4
        )
    ),
    max_leaves=12,
)
condition = st.fixed_dictionaries(
    {"type": st.sampled_from(["device", "language", "query-param", "any-value-query-param", "ip-address"]) | text},
    optional={"matchKey": st.none() | text, "matchValue": st.none() | text},
)
rules = st.lists(
    st.fixed_dictionaries({"longUrl": text, "conditions": st.lists(condition, max_size=3) | json_value}), max_size=3
)
body = st.one_of(
    st.dictionaries(st.sampled_from(BODY) | text, json_value, max_size=6),
    st.fixed_dictionaries({"redirectRules": rules | json_value}),
    json_value,
)


def encoded(value: str) -> str:
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


@pytest.fixture
def client():
    staff = make_user(is_staff=True)
    make_link(owner=staff, url="https://example.com/", slug="fz", tags=["fz"], max_visits=3)
    return shlink_client(staff)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    route=st.sampled_from(ROUTES),
    path=st.fixed_dictionaries({"code": text, "tag": text, "domain": text}),
    query=st.lists(st.tuples(st.sampled_from(QUERY) | text, text), max_size=5),
    payload=body,
)
def test_no_input_is_a_5xx_and_every_refusal_a_problem(client, route, path, query, payload):
    method, template = route
    url = "/rest/v3/" + template.format(**{name: encoded(value) or "x" for name, value in path.items()})
    if query:
        url += "?" + "&".join(f"{encoded(key)}={encoded(value)}" for key, value in query)
    data = json.dumps(payload) if method in ("POST", "PATCH", "PUT") else None
    response = client.generic(method, url, data or "", content_type="application/json")
    assert response.status_code < 500 or response.status_code == 501 and template == "mercure-info", (url, data)
    if response.status_code >= 400:
        assert response["Content-Type"] == PROBLEM, (url, data, response.content[:300])
        assert response.json()["status"] == response.status_code

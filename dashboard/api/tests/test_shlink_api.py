"""Shlink's REST API (api/shlink/): keys, scopes and teams as /api/v1 has
them, problem details for every refusal, CORS, paging and the filters of
the short URL list, domains, tags and redirect rules."""

import json
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.db import OperationalError
from django.test import RequestFactory
from django.utils import timezone
from rest_framework.test import APIClient

from links.models import Domain, Link
from slingshot.contract import visits_key
from slingshot.errors import server_error
from slingshot.redis import get_redis
from teams.models import Role
from teams.services import member_add, member_change, team_create
from testing.factories import make_link, make_user
from tokens.models import ApiToken

from .shlink import BOT, BROWSER, PROBLEM, shlink_client, store_visits

pytestmark = pytest.mark.django_db
V3 = "/rest/v3"
ERROR = "https://shlink.io/api/error/"


def problem(response, status: int, kind: str) -> dict:
    assert (response.status_code, response["Content-Type"]) == (status, PROBLEM), response.content
    body = response.json()
    assert body["type"] == (ERROR + kind if "://" not in kind else kind), body
    assert body["status"] == status and body["title"] and body["detail"]
    return body


# --- keys, scopes, teams ------------------------------------------------------------


def test_a_missing_or_wrong_key_is_shlinks_problem(user):
    problem(APIClient().get(f"{V3}/short-urls"), 401, "missing-authentication")
    problem(shlink_client(key="ssk_nope").get(f"{V3}/tags"), 401, "invalid-api-key")
    revoked = shlink_client(user, expires_at=timezone.now() + timedelta(seconds=1))
    ApiToken.objects.filter(user=user).update(revoked_at=timezone.now())
    problem(revoked.get(f"{V3}/tags"), 401, "invalid-api-key")


def test_health_needs_no_key_and_mercure_is_not_configured(user):
    for path in ("/rest/health", f"{V3}/health"):
        response = APIClient().get(path)
        assert (response.status_code, response["Content-Type"]) == (200, "application/health+json")
        assert response.json() == {"status": "pass", "version": "5.1.0"}
    problem(shlink_client(user).get(f"{V3}/mercure-info"), 501, "mercure-not-configured")


def test_a_read_key_reads_and_changes_nothing(user):
    link = make_link(owner=user, url="https://example.com/", slug="readonly", tags=["t"])
    reader = shlink_client(user, scope="read")
    assert reader.get(f"{V3}/short-urls/readonly").status_code == 200
    writes = [
        reader.post(f"{V3}/short-urls", {"longUrl": "https://example.com/x"}, format="json"),
        reader.patch(f"{V3}/short-urls/readonly", {"title": "x"}, format="json"),
        reader.delete(f"{V3}/short-urls/readonly"),
        reader.delete(f"{V3}/short-urls/readonly/visits"),
        reader.post(f"{V3}/short-urls/readonly/redirect-rules", {"redirectRules": []}, format="json"),
        reader.patch(f"{V3}/domains/redirects", {"domain": "go.example.com"}, format="json"),
        reader.delete(f"{V3}/visits/orphan"),
    ]
    for response in writes:
        problem(response, 403, "https://httpstatus.es/403")
    problem(reader.put(f"{V3}/tags", {"oldName": "t", "newName": "u"}, format="json"), 403, "forbidden-tag-operation")
    problem(reader.delete(f"{V3}/tags?tags%5B%5D=t"), 403, "forbidden-tag-operation")
    link.refresh_from_db()
    assert (link.title, link.tags) == ("", ["t"])


def test_a_teams_key_sees_that_team_only_and_a_viewer_changes_nothing(user):
    other = make_user()
    theirs = make_link(owner=other, url="https://example.com/theirs", slug="theirs", tags=["shared"])
    make_link(owner=user, url="https://example.com/mine", slug="mine", tags=["shared"])
    mine = shlink_client(user)
    problem(mine.get(f"{V3}/short-urls/theirs"), 404, "short-url-not-found")
    problem(mine.delete(f"{V3}/short-urls/theirs"), 404, "short-url-not-found")
    assert [item["shortCode"] for item in mine.get(f"{V3}/short-urls").json()["shortUrls"]["data"]] == ["mine"]
    assert mine.put(f"{V3}/tags", {"oldName": "shared", "newName": "renamed"}, format="json").status_code == 204
    theirs.refresh_from_db()
    assert theirs.tags == ["shared"]
    # A team's key, of a viewer of it: reads that team, changes nothing there.
    team = team_create(name="campaigns", actor=other)
    make_link(owner=other, team=team, url="https://example.com/c", slug="campaign")
    member_add(team=team, username=user.username, role=Role.VIEWER, actor=other)
    viewer = shlink_client(user, scope="read", team=team)
    assert [item["shortCode"] for item in viewer.get(f"{V3}/short-urls").json()["shortUrls"]["data"]] == ["campaign"]
    problem(viewer.get(f"{V3}/short-urls/mine"), 404, "short-url-not-found")


def test_a_key_acts_with_its_persons_role_now(user):
    """A write key of an editor whose role is lowered to viewer reads and
    changes nothing from then on, as in /api/v1."""
    owner = make_user()
    team = team_create(name="campaigns", actor=owner)
    membership = member_add(team=team, username=user.username, role=Role.EDITOR, actor=owner)
    make_link(owner=owner, team=team, url="https://example.com/c", slug="lowered")
    key = shlink_client(user, team=team)
    assert key.patch(f"{V3}/short-urls/lowered", {"title": "ok"}, format="json").status_code == 200
    member_change(membership=membership, role=Role.VIEWER, actor=owner)
    problem(key.patch(f"{V3}/short-urls/lowered", {"title": "no"}, format="json"), 403, "https://httpstatus.es/403")
    problem(
        key.post(f"{V3}/short-urls", {"longUrl": "https://example.com/n"}, format="json"),
        403,
        "https://httpstatus.es/403",
    )
    problem(key.delete(f"{V3}/short-urls/lowered/visits"), 403, "https://httpstatus.es/403")
    problem(key.put(f"{V3}/tags", {"oldName": "x", "newName": "y"}, format="json"), 404, "tag-not-found")
    assert key.get(f"{V3}/short-urls/lowered").json()["title"] == "ok"


def test_requests_are_throttled_a_wrong_key_too(user, settings):
    settings.API_THROTTLE_RATE = "3/min"
    client = shlink_client(user)
    statuses = [client.get(f"{V3}/tags").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    refused = client.get(f"{V3}/tags")
    problem(refused, 429, "https://httpstatus.es/429")
    assert int(refused["Retry-After"]) >= 1
    wrong = shlink_client(key="ssk_guess")
    assert [wrong.get(f"{V3}/tags", REMOTE_ADDR="192.0.2.50").status_code for _ in range(4)] == [401, 401, 401, 429]
    get_redis().delete(*get_redis().keys("slingshot:throttle:*"))


# --- problems and CORS -----------------------------------------------------------------


def test_unknown_paths_and_methods_are_problems(user):
    client = shlink_client(user)
    body = problem(client.get("/rest/v3/nothing"), 404, "not-found")
    assert body["detail"] == "Cannot GET /rest/v3/nothing"
    problem(client.get("/rest/v2/short-urls"), 404, "not-found")
    # A line feed in a path that no route takes: the catch-all must match it too.
    for path in ("/short-urls/%2F%0A", "/short-urls%0A", "/tags/%0A/visits/x"):
        problem(client.get(V3 + path), 404, "not-found")
    problem(client.put(f"{V3}/short-urls"), 405, "https://httpstatus.es/405")
    problem(
        client.post(f"{V3}/short-urls", "{not json", content_type="application/json"), 400, "malformed-request-body"
    )
    problem(client.post(f"{V3}/short-urls", [1, 2], format="json"), 400, "invalid-data")


def test_every_refusal_is_a_problem_document_those_outside_the_views_too(user, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = shlink_client(user)
    big = json.dumps({"longUrl": "https://example.com/" + "a" * 2000})
    body = problem(
        client.post(f"{V3}/short-urls", big, content_type="application/json"), 413, "https://httpstatus.es/413"
    )
    assert body["title"] == "Request Entity Too Large" and "1000 bytes" in body["detail"]
    problem(
        client.patch(f"{V3}/domains/redirects", big, content_type="application/json"), 413, "https://httpstatus.es/413"
    )
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        problem(
            client.post(f"{V3}/short-urls", "longUrl=x", content_type=content_type), 415, "https://httpstatus.es/415"
        )
    problem(client.post(f"{V3}/short-urls", b"\xff{", content_type="application/json"), 400, "malformed-request-body")
    problem(client.get(f"{V3}/short-urls", HTTP_ACCEPT="application/xml"), 406, "https://httpstatus.es/406")
    problem(client.delete(f"{V3}/health"), 405, "https://httpstatus.es/405")
    many = "&".join(f"tags[]=t{n}" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    problem(client.get(f"{V3}/short-urls?{many}"), 400, "https://httpstatus.es/400")
    problem(client.get(f"{V3}/tags", HTTP_HOST="not an allowed host"), 400, "https://httpstatus.es/400")


def test_an_error_no_view_answers_is_a_problem_document_and_a_database_away_a_503():
    request = RequestFactory().get(f"{V3}/short-urls")
    failed = server_error(request)
    assert (failed.status_code, failed["Content-Type"]) == (500, PROBLEM)
    assert json.loads(failed.content)["type"] == ERROR + "internal-server-error"
    try:
        raise OperationalError("connection to server failed: Connection refused")
    except OperationalError:
        away = server_error(request)
    assert (away.status_code, away["Content-Type"], away["Retry-After"]) == (503, PROBLEM, "5")
    body = json.loads(away.content)
    assert (body["type"], body["title"], body["status"]) == ("https://httpstatus.es/503", "Service Unavailable", 503)


@pytest.mark.parametrize("origin", ["https://app.shlink.io", "http://localhost:3000"])
def test_any_origin_may_call_it_on_answers_and_errors_and_preflights_need_no_key(user, origin):
    preflight = APIClient().options(
        f"{V3}/short-urls",
        HTTP_ORIGIN=origin,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="PATCH",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="x-api-key, content-type",
    )
    assert preflight.status_code == 200
    assert preflight["Access-Control-Allow-Origin"] == "*"
    assert "x-api-key" in preflight["Access-Control-Allow-Headers"]
    assert "PATCH" in preflight["Access-Control-Allow-Methods"]
    for response in (
        shlink_client(user).get(f"{V3}/short-urls", HTTP_ORIGIN=origin),
        APIClient().get(f"{V3}/short-urls", HTTP_ORIGIN=origin),
        shlink_client(user).get(f"{V3}/short-urls/none", HTTP_ORIGIN=origin),
        APIClient().get("/rest/v3/nothing", HTTP_ORIGIN=origin),
    ):
        assert response["Access-Control-Allow-Origin"] == "*", response.status_code
    # Slingshot's own API and pages are not opened to other sites.
    assert "Access-Control-Allow-Origin" not in APIClient().get("/api/v1/links", HTTP_ORIGIN=origin)


def test_the_origins_can_be_a_list(user, settings):
    settings.CORS_ALLOW_ALL_ORIGINS = False
    settings.CORS_ALLOWED_ORIGINS = ["https://app.shlink.io"]
    client = shlink_client(user)
    assert client.get(f"{V3}/tags", HTTP_ORIGIN="https://app.shlink.io")["Access-Control-Allow-Origin"] == (
        "https://app.shlink.io"
    )
    assert "Access-Control-Allow-Origin" not in client.get(f"{V3}/tags", HTTP_ORIGIN="https://evil.example")


# --- short URLs ------------------------------------------------------------------------


def test_create_with_shlinks_defaults_and_names(user):
    client = shlink_client(user)
    created = client.post(f"{V3}/short-urls", {"longUrl": "https://example.com/a"}, format="json").json()
    assert (created["forwardQuery"], created["crawlable"], created["domain"], created["title"]) == (
        True,
        False,
        None,
        None,
    )
    assert len(created["shortCode"]) == 7  # LINK_SLUG_LENGTH without shortCodeLength
    sized = client.post(f"{V3}/short-urls", {"longUrl": "https://example.com/b", "shortCodeLength": 4}, format="json")
    assert len(sized.json()["shortCode"]) == 4
    for length in (3, 65, "x", 4.5):
        body = problem(
            client.post(
                f"{V3}/short-urls", {"longUrl": "https://example.com/c", "shortCodeLength": length}, format="json"
            ),
            400,
            "invalid-data",
        )
        assert body["invalidElements"] == ["shortCodeLength"]
    body = problem(
        client.post(
            f"{V3}/short-urls",
            {
                "longUrl": "https://example.com/d",
                "validSince": "2030-01-01",
                "validUntil": "2029-01-01",
                "maxVisits": 0,
            },
            format="json",
        ),
        400,
        "invalid-data",
    )
    assert set(body["invalidElements"]) == {"maxVisits", "validUntil"}
    problem(client.post(f"{V3}/short-urls", {"title": "no url"}, format="json"), 400, "invalid-data")
    problem(
        client.post(f"{V3}/short-urls", {"longUrl": "https://example.com/", "pathPrefix": "a"}, format="json"),
        400,
        "invalid-data",
    )


def test_a_slug_taken_is_non_unique_slug_with_its_domain(user):
    staff_client = shlink_client(make_user(is_staff=True))
    for domain in (None, "go.example.com"):
        body = {"longUrl": "https://example.com/", "customSlug": "taken", **({"domain": domain} if domain else {})}
        assert staff_client.post(f"{V3}/short-urls", body, format="json").status_code == 200
        refused = problem(staff_client.post(f"{V3}/short-urls", body, format="json"), 400, "non-unique-slug")
        assert refused["customSlug"] == "taken" and refused.get("domain") == domain


def test_a_domain_not_served_is_added_for_staff_only(user):
    body = {"longUrl": "https://example.com/", "domain": "new.example.com"}
    refused = problem(shlink_client(user).post(f"{V3}/short-urls", body, format="json"), 400, "invalid-data")
    assert refused["invalidElements"] == ["domain"] and not Domain.objects.filter(host="new.example.com").exists()
    created = shlink_client(make_user(is_staff=True)).post(f"{V3}/short-urls", body, format="json").json()
    assert created["domain"] == urlsplit(created["shortUrl"]).netloc and created["domain"].startswith("new.example.com")
    assert Domain.objects.filter(host="new.example.com").exists()
    for client in (shlink_client(user), shlink_client(make_user(is_staff=True))):
        refused = problem(
            client.post(f"{V3}/short-urls", {**body, "domain": "bad host"}, format="json"), 400, "invalid-data"
        )
        assert refused["invalidElements"] == ["domain"]


@pytest.mark.parametrize(
    "edge, default, port",
    [
        ("http://127.0.0.1:18480", "127.0.0.1:18480", ":18480"),
        ("https://sho.rt", "sho.rt", ""),
        ("https://sho.rt", "sho.rt", ":443"),
    ],
)
def test_a_domain_is_named_by_the_authority_of_its_short_urls_and_taken_back_so(user, settings, edge, default, port):
    """Shlink's web client asks each domain listDomains names for
    <scheme>://<domain>/rest/v3/health, and sends that name back in every
    `domain` it passes: with the port where the short URLs have one."""
    settings.EDGE_BASE_URL = edge
    staff = shlink_client(make_user(is_staff=True))
    plain = staff.post(f"{V3}/short-urls", {"longUrl": "https://example.com/d", "customSlug": "auth-d"}, format="json")
    assert urlsplit(plain.json()["shortUrl"]).netloc == default and plain.json()["domain"] is None
    away = staff.post(
        f"{V3}/short-urls",
        {"longUrl": "https://example.com/a", "customSlug": "auth-a", "domain": f"go.example.com{port}"},
        format="json",
    ).json()
    authority = urlsplit(away["shortUrl"]).netloc
    assert away["domain"] == authority == "go.example.com" + (port if port != ":443" else "")
    listed = {entry["domain"]: entry["isDefault"] for entry in staff.get(f"{V3}/domains").json()["domains"]["data"]}
    assert listed == {default: True, authority: False}
    # What listDomains named, sent back: the same domains, no new one.
    for named, slug in ((default, "auth-d"), (authority, "auth-a"), (f"go.example.com{port}", "auth-a")):
        assert staff.get(f"{V3}/short-urls/{slug}", {"domain": named}).json()["shortCode"] == slug
        listing = staff.get(f"{V3}/short-urls", {"domain": named}).json()["shortUrls"]["data"]
        assert [item["shortCode"] for item in listing] == [slug]
        assert staff.get(f"{V3}/domains/{named}/visits").status_code == 200
        assert staff.get(f"{V3}/visits/orphan", {"domain": named}).status_code == 200
    again = staff.post(
        f"{V3}/short-urls",
        {"longUrl": "https://example.com/b", "customSlug": "auth-b", "domain": authority},
        format="json",
    ).json()
    assert again["domain"] == authority
    changed = staff.patch(
        f"{V3}/domains/redirects", {"domain": authority, "baseUrlRedirect": "https://example.com/"}, format="json"
    )
    assert changed.status_code == 200 and Domain.objects.get(host="go.example.com").root_url == "https://example.com/"
    assert Domain.objects.filter(host__contains=":").count() == 0 and Domain.objects.count() == 2
    # Another port is another authority, which Slingshot does not serve.
    problem(staff.get(f"{V3}/short-urls/auth-a", {"domain": "go.example.com:9999"}), 404, "short-url-not-found")
    problem(staff.get(f"{V3}/domains/go.example.com:9999/visits"), 404, "domain-not-found")
    refused = staff.post(
        f"{V3}/short-urls", {"longUrl": "https://example.com/c", "domain": "go.example.com:9999"}, format="json"
    )
    assert problem(refused, 400, "invalid-data")["invalidElements"] == ["domain"]


def test_find_if_exists_matches_every_option_given(user):
    client = shlink_client(user)
    first = client.post(
        f"{V3}/short-urls", {"longUrl": "HTTPS://Example.com/f", "tags": ["a", "b"]}, format="json"
    ).json()
    find = {"longUrl": "https://example.com/f", "findIfExists": True}
    assert client.post(f"{V3}/short-urls", find, format="json").json()["shortCode"] == first["shortCode"]
    assert (
        client.post(f"{V3}/short-urls", {**find, "tags": ["b", "a"]}, format="json").json()["shortCode"]
        == first["shortCode"]
    )
    assert (
        client.post(f"{V3}/short-urls", {**find, "tags": ["a"]}, format="json").json()["shortCode"]
        != first["shortCode"]
    )
    assert (
        client.post(f"{V3}/short-urls", {**find, "maxVisits": 5}, format="json").json()["shortCode"]
        != first["shortCode"]
    )
    # Someone else's is not found: it would tell them of another team's links.
    other = shlink_client(make_user()).post(f"{V3}/short-urls", find, format="json").json()
    assert other["shortCode"] != first["shortCode"]


def test_patch_changes_what_it_names_and_null_clears(user):
    make_link(
        owner=user, url="https://example.com/", slug="edit", title="T", max_visits=5, tags=["x"], forward_query=True
    )
    client = shlink_client(user)
    body = client.patch(
        f"{V3}/short-urls/edit", {"maxVisits": None, "title": None, "crawlable": True}, format="json"
    ).json()
    assert (body["meta"]["maxVisits"], body["title"], body["crawlable"], body["tags"], body["forwardQuery"]) == (
        None,
        None,
        True,
        ["x"],
        True,
    )
    body = problem(
        client.patch(f"{V3}/short-urls/edit", {"longUrl": "javascript:alert(1)"}, format="json"), 400, "invalid-data"
    )
    assert body["invalidElements"] == ["longUrl"]
    problem(client.patch(f"{V3}/short-urls/edit", {"crawlable": "yes"}, format="json"), 400, "invalid-data")


def test_the_list_pages_and_filters_as_shlink(user):
    client = shlink_client(user)
    now = timezone.now()
    specs = [
        ("alpha", {"tags": ["a", "b"], "title": "Zeta"}),
        ("bravo", {"tags": ["b"], "max_visits": 1}),
        ("charlie", {"tags": ["c"], "expires_at": now - timedelta(days=1), "valid_since": now - timedelta(days=2)}),
        ("delta", {"title": "Alpha"}),
    ]
    links = {
        slug: make_link(owner=user, url=f"https://example.com/{slug}", slug=slug, **options) for slug, options in specs
    }
    store_visits((links["delta"], BROWSER), (links["delta"], BOT), (links["alpha"], BROWSER))
    get_redis().set(visits_key(links["bravo"].pk), 1)

    def codes(**query):
        response = client.get(f"{V3}/short-urls", query)
        assert response.status_code == 200, response.content
        return [item["shortCode"] for item in response.json()["shortUrls"]["data"]]

    assert codes() == ["delta", "charlie", "bravo", "alpha"]  # newest first
    page = client.get(f"{V3}/short-urls", {"page": 2, "itemsPerPage": 3}).json()["shortUrls"]
    assert page["pagination"] == {
        "currentPage": 2,
        "pagesCount": 2,
        "itemsPerPage": 3,
        "itemsInCurrentPage": 1,
        "totalItems": 4,
    }
    assert codes(itemsPerPage=-1) == codes()
    assert codes(orderBy="shortCode") == ["alpha", "bravo", "charlie", "delta"]
    assert codes(orderBy="shortCode-DESC") == ["delta", "charlie", "bravo", "alpha"]
    assert codes(orderBy="visits-DESC") == ["delta", "alpha", "charlie", "bravo"]
    assert codes(orderBy="nonBotVisits-ASC") == ["bravo", "charlie", "alpha", "delta"]  # ties by age
    assert codes(orderBy="title-ASC")[-2:] == ["delta", "alpha"]
    assert codes(**{"tags[]": ["b"]}) == ["bravo", "alpha"]
    assert codes(**{"tags[]": ["a", "c"]}) == ["charlie", "alpha"]
    assert codes(**{"tags[]": ["a", "b"], "tagsMode": "all"}) == ["alpha"]
    assert codes(**{"tags[]": ["A"]}) == ["alpha"]  # case aside
    assert codes(**{"excludeTags[]": ["b"]}) == ["delta", "charlie"]
    assert codes(**{"excludeTags[]": ["a", "b"], "excludeTagsMode": "all"}) == ["delta", "charlie", "bravo"]
    assert codes(excludeMaxVisitsReached="true") == ["delta", "charlie", "alpha"]
    assert codes(excludePastValidUntil="true") == ["delta", "bravo", "alpha"]
    assert codes(searchTerm="zeta") == ["alpha"]
    assert codes(domain="DEFAULT") == codes()
    assert codes(domain="elsewhere.example") == []
    assert codes(startDate=(now + timedelta(hours=1)).isoformat()) == []
    assert codes(endDate=(now - timedelta(hours=1)).isoformat()) == []
    for query in ({"orderBy": "slug-ASC"}, {"tagsMode": "some"}, {"page": "0"}, {"page": "x"}, {"startDate": "soon"}):
        problem(client.get(f"{V3}/short-urls", query), 400, "invalid-data")


# --- tags, domains, redirect rules --------------------------------------------------------


def test_tags_list_stats_rename_and_delete(user):
    client = shlink_client(user)
    one = make_link(owner=user, url="https://example.com/1", slug="one", tags=["news", "sale"])
    make_link(owner=user, url="https://example.com/2", slug="two", tags=["sale"])
    store_visits((one, BROWSER), (one, BOT))
    assert client.get(f"{V3}/tags").json()["tags"]["data"] == ["news", "sale"]
    assert client.get(f"{V3}/tags", {"searchTerm": "NE"}).json()["tags"]["data"] == ["news"]
    stats = client.get(f"{V3}/tags/stats", {"orderBy": "shortUrlsCount-DESC"}).json()["tags"]["data"]
    assert stats == [
        {"tag": "sale", "shortUrlsCount": 2, "visitsSummary": {"total": 2, "nonBots": 1, "bots": 1}},
        {"tag": "news", "shortUrlsCount": 1, "visitsSummary": {"total": 2, "nonBots": 1, "bots": 1}},
    ]
    conflict = problem(
        client.put(f"{V3}/tags", {"oldName": "sale", "newName": "news"}, format="json"), 409, "tag-conflict"
    )
    assert (conflict["oldName"], conflict["newName"]) == ("sale", "news")
    problem(client.put(f"{V3}/tags", {"oldName": "gone", "newName": "x"}, format="json"), 404, "tag-not-found")
    assert problem(client.put(f"{V3}/tags", {"oldName": "sale"}, format="json"), 400, "invalid-data")[
        "invalidElements"
    ] == ["newName"]
    problem(client.put(f"{V3}/tags", {"oldName": "sale", "newName": "two words"}, format="json"), 400, "invalid-data")
    assert client.put(f"{V3}/tags", {"oldName": "sale", "newName": "offer"}, format="json").status_code == 204
    assert client.get(f"{V3}/short-urls/one").json()["tags"] == ["news", "offer"]
    assert client.delete(f"{V3}/tags?tags%5B%5D=offer&tags%5B%5D=missing").status_code == 204
    assert client.get(f"{V3}/tags").json()["tags"]["data"] == ["news"]


def test_domains_and_their_redirects(user):
    staff = shlink_client(make_user(is_staff=True))
    assert staff.get(f"{V3}/domains").json()["domains"]["data"][0]["isDefault"] is True
    set_ = staff.patch(
        f"{V3}/domains/redirects",
        {
            "domain": "links.example.com",
            "baseUrlRedirect": "https://example.com/",
            "regular404Redirect": "https://example.com/404",
        },
        format="json",
    )
    assert set_.json() == {
        "baseUrlRedirect": "https://example.com/",
        "regular404Redirect": "https://example.com/404",
        "invalidShortUrlRedirect": "https://example.com/404",
    }
    domain = Domain.objects.get(host="links.example.com")
    assert (domain.root_url, domain.not_found_url) == ("https://example.com/", "https://example.com/404")
    cleared = staff.patch(
        f"{V3}/domains/redirects", {"domain": "links.example.com", "invalidShortUrlRedirect": None}, format="json"
    )
    assert (
        cleared.json()["invalidShortUrlRedirect"] is None
        and cleared.json()["baseUrlRedirect"] == "https://example.com/"
    )
    two = {
        "domain": "links.example.com",
        "regular404Redirect": "https://a.example/",
        "invalidShortUrlRedirect": "https://b.example/",
    }
    assert problem(staff.patch(f"{V3}/domains/redirects", two, format="json"), 400, "invalid-data")[
        "invalidElements"
    ] == ["regular404Redirect"]
    bad = {"domain": "links.example.com", "baseUrlRedirect": "ftp://example.com/"}
    assert problem(staff.patch(f"{V3}/domains/redirects", bad, format="json"), 400, "invalid-data")[
        "invalidElements"
    ] == ["baseUrlRedirect"]
    problem(staff.patch(f"{V3}/domains/redirects", {}, format="json"), 400, "invalid-data")
    problem(
        shlink_client(user).patch(f"{V3}/domains/redirects", {"domain": "links.example.com"}, format="json"),
        403,
        "https://httpstatus.es/403",
    )
    problem(shlink_client(user).get(f"{V3}/domains/nowhere.example/visits"), 404, "domain-not-found")


def test_redirect_rules_map_onto_slingshots_and_what_it_cannot_evaluate_is_refused(user):
    make_link(
        owner=user,
        url="https://example.com/",
        slug="ruled",
        split=[
            {"url": "https://example.com/a", "weight": 1},
            {"url": "https://example.com/b", "weight": 1},
        ],
    )
    client = shlink_client(user)
    rules = [
        {
            "longUrl": "https://example.com/android",
            "conditions": [{"type": "device", "matchKey": None, "matchValue": "android"}],
        },
        {
            "longUrl": "https://example.com/q",
            "conditions": [
                {"type": "query-param", "matchKey": "ref", "matchValue": "mail"},
                {"type": "any-value-query-param", "matchKey": "utm", "matchValue": None},
                {"type": "geolocation-country-code", "matchKey": None, "matchValue": "de"},
                {"type": "language", "matchKey": None, "matchValue": "en-us"},
            ],
        },
    ]
    set_ = client.post(f"{V3}/short-urls/ruled/redirect-rules", {"redirectRules": rules}, format="json").json()
    assert set_["redirectRules"][1]["conditions"] == [
        {"type": "query-param", "matchKey": "ref", "matchValue": "mail"},
        {"type": "any-value-query-param", "matchKey": "utm", "matchValue": None},
        {"type": "geolocation-country-code", "matchKey": None, "matchValue": "DE"},
        {"type": "language", "matchKey": None, "matchValue": "en-US"},
    ]
    link = Link.objects.get(slug="ruled")
    assert link.rules[0] == {
        "url": "https://example.com/android",
        "conditions": [{"type": "device", "value": "android"}],
    }
    assert len(link.split) == 2  # Shlink has no split: left as it was
    for condition in (
        {"type": "valueless-query-param", "matchKey": "a", "matchValue": None},
        {"type": "geolocation-city-name", "matchKey": None, "matchValue": "Berlin"},
        {"type": "telepathy", "matchKey": None, "matchValue": "x"},
        {"type": "ip-address", "matchKey": None, "matchValue": "192.0.2.0/33"},
        {"type": "before-date", "matchKey": None, "matchValue": "next tuesday"},
        {"type": "browser", "matchKey": None, "matchValue": "netscape"},
        {"type": "device", "matchKey": None, "matchValue": "tv"},
    ):
        body = {"redirectRules": [{"longUrl": "https://example.com/x", "conditions": [condition]}]}
        refused = problem(
            client.post(f"{V3}/short-urls/ruled/redirect-rules", body, format="json"), 400, "invalid-data"
        )
        assert refused["invalidElements"] == ["redirectRules"] and "redirectRules[0]" in refused["detail"], refused
    link.refresh_from_db()
    assert len(link.rules) == 2
    assert (
        client.post(f"{V3}/short-urls/ruled/redirect-rules", {"redirectRules": []}, format="json").json()[
            "redirectRules"
        ]
        == []
    )
    assert client.get(f"{V3}/short-urls/ruled").json()["hasRedirectRules"] is False


def test_shlink_5s_conditions_round_trip_by_shlinks_names_and_shapes(user):
    make_link(owner=user, url="https://example.com/", slug="ruled5")
    client = shlink_client(user)
    conditions = [
        {"type": "ip-address", "matchKey": None, "matchValue": "192.168.1.*"},
        {"type": "ip-address", "matchKey": None, "matchValue": "2001:db8::/32"},
        {"type": "browser", "matchKey": None, "matchValue": "android_browser"},
        {"type": "before-date", "matchKey": None, "matchValue": "2030-01-31T23:59:59+01:00"},
        {"type": "after-date", "matchKey": None, "matchValue": "2030-01-01"},
        {"type": "device", "matchKey": None, "matchValue": "chromeos"},
    ]
    body = {"redirectRules": [{"longUrl": "https://example.com/5", "conditions": conditions}]}
    set_ = client.post(f"{V3}/short-urls/ruled5/redirect-rules", body, format="json")
    assert set_.status_code == 200, set_.content
    shown = [
        {"type": "ip-address", "matchKey": None, "matchValue": "192.168.1.*"},
        {"type": "ip-address", "matchKey": None, "matchValue": "2001:db8::/32"},
        {"type": "browser", "matchKey": None, "matchValue": "android_browser"},
        {"type": "before-date", "matchKey": None, "matchValue": "2030-01-31T22:59:59+00:00"},
        {"type": "after-date", "matchKey": None, "matchValue": "2030-01-01T00:00:00+00:00"},
        {"type": "device", "matchKey": None, "matchValue": "chromeos"},
    ]
    assert set_.json()["redirectRules"] == [{"longUrl": "https://example.com/5", "priority": 1, "conditions": shown}]
    assert client.get(f"{V3}/short-urls/ruled5/redirect-rules").json() == set_.json()
    assert Link.objects.get(slug="ruled5").rules[0]["conditions"][3:5] == [
        {"type": "before", "value": "2030-01-31T22:59:59Z"},
        {"type": "after", "value": "2030-01-01T00:00:00Z"},
    ]


@pytest.mark.parametrize(
    "route", ["short-urls", "tags", "tags/stats", "visits/orphan", "visits/non-orphan", "short-urls/far/visits"]
)
def test_a_page_past_what_an_offset_can_hold_is_refused_not_a_5xx(route):
    from api.shlink.base import MAX_PAGE

    staff = make_user(is_staff=True)  # staff: orphan visits are read, not answered empty
    make_link(owner=staff, url="https://example.com/", slug="far")
    client = shlink_client(staff)
    last = client.get(f"{V3}/{route}", {"page": MAX_PAGE})
    assert last.status_code == 200, last.content
    for page in (MAX_PAGE + 1, 2**70, "²"):
        response = client.get(f"{V3}/{route}", {"page": page})
        assert response.status_code == 400, (page, response.content)
        assert response["Content-Type"] == PROBLEM
        assert "page" in response.json()["invalidElements"]

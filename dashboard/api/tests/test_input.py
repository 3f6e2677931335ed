"""Text the API cannot keep, or that cannot be seen where it would change
what was asked for: a 400 naming the field, never a 500, and nothing stored.

Bodies go as a client sends them: json.dumps writes a lone surrogate as its
escape ("\\ud800"), which the API's JSON parser decodes to one."""

import json

import pytest
from django.db import connection
from rest_framework.test import APIClient

from links.models import Domain, Link
from teams.models import Team
from teams.services import team_create
from testing.factories import fresh, make_link
from tokens.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)

SURROGATES = ["\ud800", "\udfff"]
# Characters IDNA maps to nothing (slingshot.text.invisible): dropped from a
# host, they would leave another host than the one typed.
INVISIBLE = ["\u3164", "\u115f", "\u1160", "\uffa0", "\ufe0f", "\u200b"]
UNSTORABLE = [*SURROGATES, "\x00"]
EVERY = [*UNSTORABLE, *INVISIBLE]
RULE = {"url": "https://rule.example/", "conditions": [{"type": "device", "value": "ios"}]}
SPLIT = [{"url": "https://a.example/", "weight": 1}, {"url": "https://b.example/", "weight": 1}]


def send(client, method: str, path: str, body):
    return getattr(client, method)(path, json.dumps(body), content_type="application/json")


def refused(response, field: str, case) -> dict:
    """The 400's body, which names `field` and can be read as UTF-8 JSON."""
    assert response.status_code == 400, (case, response.status_code, response.content[:300])
    body = json.loads(response.content.decode("utf-8"))
    assert field in body, (case, body)
    return body


def stored_rows() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in (Link, Domain, ApiToken, Team)}


@pytest.fixture(autouse=True)
def edge_at(settings):
    settings.EDGE_BASE_URL = "https://sho.rt"


def link_bodies(char: str) -> list[tuple[str, dict]]:
    """(the field a 400 names, a link's body) with `char` where it cannot go."""
    bodies = [
        ("url", {"url": f"https://exa{char}mple.com/"}),
        ("url", {"url": f"https://{char}example.com/x"}),
        ("url", {"url": f"https://bü{char}cher.example/"}),
        ("domain", {"url": "https://example.com/", "domain": f"sho{char}.rt"}),
        ("tags", {"url": "https://example.com/", "tags": ["ok", f"sale{char}"]}),
        ("rules", {"url": "https://example.com/", "rules": [{**RULE, "url": f"https://ru{char}le.example/"}]}),
        (
            "split",
            {"url": "https://example.com/", "split": [SPLIT[0], {"url": f"https://{char}b.example/", "weight": 1}]},
        ),
    ]
    if char in UNSTORABLE:  # text no field can hold, wherever it is
        bodies += [
            ("url", {"url": f"https://example.com/a{char}b?q={char}"}),
            ("slug", {"url": "https://example.com/", "slug": f"s{char}"}),
            ("title", {"url": "https://example.com/", "title": f"Spring{char}"}),
            ("description", {"url": "https://example.com/", "description": f"{char}"}),
            ("redirect_status", {"url": "https://example.com/", "redirect_status": f"30{char}"}),
            ("expires_at", {"url": "https://example.com/", "expires_at": f"2030-01-01{char}"}),
            ("rules", {"url": "https://example.com/", "rules": [{**RULE, f"extra{char}": 1}]}),
            (
                "rules",
                {
                    "url": "https://example.com/",
                    "rules": [{**RULE, "conditions": [{"type": "query", "key": f"k{char}"}]}],
                },
            ),
            (
                "rules",
                {
                    "url": "https://example.com/",
                    "rules": [{**RULE, "conditions": [{"type": "device", "value": f"ios{char}"}]}],
                },
            ),
            (
                "split",
                {"url": "https://example.com/", "split": [SPLIT[0], {"url": f"https://b.example/{char}", "weight": 1}]},
            ),
            ("k" + ascii(char)[1:-1], {"url": "https://example.com/", f"k{char}": 1}),
        ]
    return bodies


def test_a_link_with_what_cannot_be_kept_or_seen_is_a_400_naming_the_field(api):
    before = stored_rows()
    for char in EVERY:
        for field, body in link_bodies(char):
            refused(send(api, "post", "/api/v1/links", body), field, (char, body))
    assert stored_rows() == before


def test_a_change_to_a_link_likewise_and_the_link_stays_as_it_was(api, user):
    link = make_link(owner=user, url="https://example.com/kept", slug=fresh(), title="Kept", tags=["a"])
    kept = api.get(f"/api/v1/links/{link.slug}").json()
    for char in EVERY:
        for field, body in link_bodies(char):
            if field != "url":
                body.pop("url")
            refused(send(api, "patch", f"/api/v1/links/{link.slug}", body), field, (char, body))
    assert api.get(f"/api/v1/links/{link.slug}").json() == kept


def test_the_same_characters_where_they_belong_are_kept_as_typed(api):
    """In a path or a query they are percent-encoded, as any non-ASCII
    character; in a title, an emoji's variation selector included, kept."""
    body = {
        "url": "https://example.com/a\u3164b?q=\ufe0f",
        "title": "Sale \u2764\ufe0f \u3164",
        "description": "\u200b",
    }
    created = send(api, "post", "/api/v1/links", body)
    assert created.status_code == 201, created.content
    link = created.json()
    assert link["url"] == "https://example.com/a%E3%85%A4b?q=%EF%B8%8F"
    assert (link["title"], link["description"]) == (body["title"], body["description"])


def test_bulk_create_refuses_each_bad_item_by_its_field_and_creates_the_others(api):
    items, fields = [], []
    for char in EVERY:
        for field, body in link_bodies(char)[:5]:
            items.append(body)
            fields.append(field)
    good = fresh()
    items.insert(3, {"url": "https://example.com/good", "slug": good})
    response = send(api, "post", "/api/v1/links/bulk", {"links": items})
    assert response.status_code == 200, response.content
    results = json.loads(response.content.decode("utf-8"))["results"]
    assert results.pop(3)["status"] == 201
    assert [(result["status"], list(result["errors"])) for result in results] == [(400, [field]) for field in fields]
    assert list(Link.objects.values_list("slug", flat=True)) == [good]


def test_a_domain_with_what_cannot_be_kept_or_seen_is_a_400_and_nothing_changes(client_for, make_user):
    staff = client_for(make_user(is_staff=True))
    assert send(staff, "patch", "/api/v1/domains/sho.rt", {"root_url": "https://root.example/"}).status_code == 200
    before, default = stored_rows(), Domain.objects.values().get(host="sho.rt")
    for char in EVERY:
        cases = [
            ("host", {"host": f"go{char}.example.org"}),
            ("root_url", {"host": "go.example.org", "root_url": f"https://ro{char}ot.example/"}),
            ("not_found_url", {"host": "go.example.org", "not_found_url": f"https://{char}nf.example/"}),
        ]
        for field, body in cases:
            refused(send(staff, "post", "/api/v1/domains", body), field, (char, body))
            if field != "host":
                del body["host"]
                refused(send(staff, "patch", "/api/v1/domains/sho.rt", body), field, (char, body))
    assert stored_rows() == before
    assert Domain.objects.values().get(host="sho.rt") == default


def test_tokens_and_members_refuse_what_cannot_be_kept(user):
    session = APIClient()  # tokens are made from a signed-in session
    session.force_authenticate(user=user)
    owner = user
    team = team_create(actor=owner, name="Crew")
    before = stored_rows()
    for char in UNSTORABLE:
        for field, body in [("name", {"name": f"ci{char}"}), ("scope", {"name": "ci", "scope": f"read{char}"})]:
            refused(send(session, "post", "/api/v1/tokens", body), field, (char, body))
        for field, body in [
            ("username", {"username": f"someone{char}", "role": "viewer"}),
            ("role", {"username": owner.username, "role": f"viewer{char}"}),
        ]:
            refused(send(session, "post", f"/api/v1/teams/{team.pk}/members", body), field, (char, body))
    assert stored_rows() == before


@pytest.mark.parametrize(
    "path, field",
    [
        ("/api/v1/links?search=a%00", "search"),
        ("/api/v1/links?tag=a%00", "tag"),
        ("/api/v1/links?domain=sho%E3%85%A4.rt", "domain"),
        ("/api/v1/links/{slug}?domain=sho%E3%85%A4.rt", "domain"),
        ("/api/v1/links/{slug}/stats?browser=a%00", "browser"),
        ("/api/v1/links/{slug}/stats?referer_host=%00", "referer_host"),
        ("/api/v1/links/{slug}/stats?tz=Europe/Berlin%00", "tz"),
        ("/api/v1/clicks?domain=sho%E3%85%A4.rt", "domain"),
        ("/api/v1/clicks?link=a%00", "link"),
        ("/api/v1/audit?link=a%00", "link"),
        ("/api/v1/orphan-visits?domain=go%E3%85%A4.example.org", "domain"),
        ("/api/v1/orphan-visits?domain=go%00.example.org", "domain"),
    ],
)
def test_query_parameters_are_refused_by_name(client_for, make_user, path, field):
    staff = make_user(is_staff=True)
    link = make_link(owner=staff, url="https://example.com/", slug=fresh())
    refused(client_for(staff).get(path.format(slug=link.slug)), field, path)


def test_bytes_that_are_not_utf8_in_a_query_never_reach_a_500(client_for, make_user):
    """A surrogate's bytes (ED A0 80) cannot be a query's text: Django reads
    them as U+FFFD, which is text; whatever the answer, it is not a 500."""
    staff = make_user(is_staff=True)
    link = make_link(owner=staff, url="https://example.com/", slug=fresh())
    api = client_for(staff)
    for path in [
        "/api/v1/links?search=%ED%A0%80",
        f"/api/v1/links/{link.slug}/stats?browser=%ED%A0%80",
        "/api/v1/orphan-visits?domain=%ED%A0%80",
        "/api/v1/clicks?domain=%ED%A0%80",
    ]:
        response = api.get(path)
        assert response.status_code in (200, 400), (path, response.content)
        json.loads(response.content.decode("utf-8"))
    with connection.cursor() as cursor:  # the stats filter matched nothing and stored nothing
        cursor.execute("SELECT count(*) FROM links_link")
        assert cursor.fetchone() == (1,)

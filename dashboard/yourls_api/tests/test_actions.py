"""The YOURLS API's actions (yourls_api/actions.py) over Slingshot's links:
created through links.services in the token's team, a keyword a slug,
existing URLs as YOURLS answers them, stats from the click totals; and a
team's links out of every other team's reach."""

import json

import pytest

from links.models import Link
from testing.factories import make_link
from tokens.signatures import token_signature

from .conftest import click

pytestmark = pytest.mark.django_db


@pytest.fixture
def call(yourls, user, make_token):
    """call(action, **params) -> (status, decoded JSON) with a write token of `user`'s."""
    _, raw = make_token(user)

    def request(action: str, method: str = "GET", **params):
        response = yourls(method, action=action, signature=raw, format="json", **params)
        return response.status_code, json.loads(response.content)

    return request


def test_shorturl_makes_a_link_and_answers_as_yourls(call, user, settings):
    status, answer = call(
        "shorturl", method="POST", url="https://example.com/spring?x=1", keyword="spring", title="Spring"
    )
    link = Link.objects.get(slug="spring")
    short = settings.EDGE_BASE_URL + "/spring"
    assert (link.url, link.title, link.team.personal_for_id, link.owner) == (
        "https://example.com/spring?x=1",
        "Spring",
        user.pk,
        user,
    )
    assert status == 200
    assert list(answer) == ["status", "code", "message", "errorCode", "statusCode", "url", "title", "shorturl"]
    assert answer == {
        "status": "success",
        "code": "",
        "message": "https://example.com/spring?x=1 added to database",
        "errorCode": "",
        "statusCode": "200",
        "url": {
            "keyword": "spring",
            "url": "https://example.com/spring?x=1",
            "title": "Spring",
            "date": link.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            "ip": "",
        },
        "title": "Spring",
        "shorturl": short,
    }


def test_shorturl_without_keyword_or_title_generates_a_slug_and_titles_it_with_the_url(call, yourls, user, make_token):
    status, answer = call("shorturl", url="https://example.com/" + "long/" * 20)
    link = Link.objects.get(slug=answer["url"]["keyword"])
    assert status == 200 and len(link.slug) == 7 and link.title == ""
    assert answer["title"] == answer["url"]["title"] == link.url
    assert answer["message"] == "https://example.com/long/long/long/long/long/long/long/[...] added to database"
    token, _ = make_token(user)
    simple = yourls(
        "POST", action="shorturl", signature=token_signature(token), format="simple", url="https://example.com/b"
    )
    assert simple.content.decode() == Link.objects.get(url="https://example.com/b").short_url


def test_an_existing_url_is_answered_with_its_link_as_yourls_does(call, user, settings, empty_streams):
    first = make_link(owner=user, url="https://example.com/again", slug="again", title="Again")
    click({first: 3})
    status, answer = call("shorturl", url="https://example.com/again", keyword="other")
    assert status == 400
    assert answer["status"] == "fail" and answer["code"] == "error:url"
    assert (
        answer["message"]
        == f"https://example.com/again already exists in database (short URL: {first.short_url.split('://')[1]})"
    )
    assert answer["url"]["keyword"] == "again" and answer["url"]["clicks"] == "3"
    assert answer["shorturl"] == first.short_url and answer["title"] == "Again"
    assert not Link.objects.filter(slug="other").exists()
    settings.YOURLS_UNIQUE_URLS = False
    status, answer = call("shorturl", url="https://example.com/again", keyword="other")
    assert status == 200 and Link.objects.filter(url="https://example.com/again").count() == 2


@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        ({}, "error:nourl", "Missing or malformed URL"),
        ({"url": "https://"}, "error:nourl", "Missing or malformed URL"),
        (
            {"url": "ftp://example.com/"},
            "error:nourl",
            "Missing or malformed URL: Only http and https URLs can be shortened.",
        ),
        ({"url": "http://127.0.0.1:1/x"}, "error:noloop", "URL is a short URL"),
        (
            {"url": "https://example.com/", "keyword": "taken"},
            "error:keyword",
            "Short URL taken already exists in database or is reserved",
        ),
        (
            {"url": "https://example.com/", "keyword": "admin"},
            "error:keyword",
            "Short URL admin already exists in database or is reserved",
        ),
        (
            {"url": "https://example.com/", "keyword": "no spaces"},
            "error:keyword",
            "Short URL no spaces is not a valid keyword: use 1 to 64 letters, digits, '-' and '_'.",
        ),
        (
            {"url": "https://example.com/", "title": "t" * 201},
            "error:title",
            "Ensure this value has at most 200 characters (it has 201).",
        ),
    ],
)
def test_what_shorturl_refuses_is_a_400_with_yourls_codes(call, user, params, code, message):
    make_link(owner=user, url="https://example.org/first", slug="taken")
    before = Link.objects.count()
    status, answer = call("shorturl", **params)
    assert (status, answer["status"], answer["code"], answer["message"]) == (400, "fail", code, message)
    assert answer["errorCode"] == answer["statusCode"] == "400"
    assert Link.objects.count() == before


def test_a_read_token_or_a_viewer_cannot_create(yourls, user, make_user, make_token):
    from teams.models import Membership, Role, Team

    _, read = make_token(user, scope="read")
    response = yourls(action="shorturl", signature=read, format="json", url="https://example.com/r")
    assert response.status_code == 403
    assert json.loads(response.content)["code"] == "error:forbidden"
    team = Team.objects.create(name="viewers")
    Membership.objects.create(team=team, user=user, role=Role.EDITOR)
    token, raw = make_token(user, team=team)
    Membership.objects.filter(team=team, user=user).update(role=Role.VIEWER)
    response = yourls(action="shorturl", signature=raw, format="json", url="https://example.com/r")
    assert response.status_code == 403 and "editor" in json.loads(response.content)["message"]
    assert not Link.objects.filter(url="https://example.com/r").exists()
    assert yourls(action="db-stats", signature=read, format="json").status_code == 200  # reading is allowed


def test_expand_by_keyword_or_short_url(call, user):
    link = make_link(owner=user, url="https://example.com/e", slug="exp", title="")
    expected = {
        "keyword": "exp",
        "shorturl": link.short_url,
        "longurl": "https://example.com/e",
        "title": "https://example.com/e",
        "message": "success",
        "statusCode": "200",
    }
    assert call("expand", shorturl="exp") == (200, expected)
    assert call("expand", shorturl=link.short_url) == (200, expected)
    assert call("expand", shorturl="nope") == (
        404,
        {"keyword": "nope", "message": "Error: short URL not found", "errorCode": "404"},
    )
    assert call("expand", shorturl="https://elsewhere.example/exp")[0] == 404


def test_url_stats_counts_every_click_bots_too(call, user, empty_streams):
    link = make_link(owner=user, url="https://example.com/s", slug="stat", title="Stat")
    click({link: 5})
    status, answer = call("url-stats", shorturl="stat")
    assert status == 200
    assert answer == {
        "statusCode": "200",
        "message": "success",
        "link": {
            "shorturl": link.short_url,
            "url": "https://example.com/s",
            "title": "Stat",
            "timestamp": link.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            "ip": "",
            "clicks": "5",
        },
    }
    assert call("url-stats", shorturl="nope") == (404, {"statusCode": "404", "message": "Error: short URL not found"})


def test_stats_top_bottom_last_and_rand(call, user, empty_streams):
    links = [make_link(owner=user, url=f"https://example.com/{n}", slug=f"s{n}") for n in range(4)]
    click(dict(zip(links, (2, 7, 0, 4), strict=True)))

    def keywords(filter_: str, **params) -> list[str]:
        status, answer = call("stats", filter=filter_, **params)
        assert status == 200 and answer["stats"] == {"total_links": 4, "total_clicks": 13}
        assert list(answer) == (["links"] if "links" in answer else []) + ["stats", "statusCode", "message"]
        return [row["shorturl"].rsplit("/", 1)[1] for row in answer.get("links", {}).values()]

    assert keywords("top", limit="3") == ["s1", "s3", "s0"]
    assert keywords("bottom", limit="2") == ["s2", "s0"]
    assert keywords("last", limit="10") == ["s3", "s2", "s1", "s0"]
    assert keywords("top", limit="2", start="1") == ["s3", "s0"]
    assert sorted(keywords("rand", limit="4")) == ["s0", "s1", "s2", "s3"]
    assert keywords("top") == []  # YOURLS lists no link without a limit
    assert keywords("top", limit="-3", start="-1") == []
    status, answer = call("stats", filter="top", limit="1")
    assert answer["links"]["link_1"]["clicks"] == "7"


def test_db_stats_are_the_teams(call, user, make_user, empty_streams):
    link = make_link(owner=user, url="https://example.com/d", slug="dbs")
    click({link: 2, make_link(owner=make_user(), url="https://example.com/d"): 9})  # the second another team's
    assert call("db-stats") == (
        200,
        {"db-stats": {"total_links": 1, "total_clicks": 2}, "statusCode": "200", "message": "success"},
    )


def test_another_teams_links_are_out_of_reach(call, user, make_user):
    other = make_user()
    theirs = make_link(owner=other, url="https://example.com/theirs", slug="theirs")
    assert call("expand", shorturl="theirs")[0] == 404
    assert call("url-stats", shorturl=theirs.short_url)[0] == 404
    assert "links" not in call("stats", limit="10")[1]
    status, answer = call("shorturl", url="https://example.com/theirs")  # not a duplicate of theirs
    assert status == 200 and Link.objects.get(slug=answer["url"]["keyword"]).team.personal_for == user
    assert call("shorturl", url="https://example.com/x", keyword="theirs")[1]["code"] == "error:keyword"

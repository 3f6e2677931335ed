"""LINK_CREATE_RATE (links/limits.py): links made per team and per API
token, at every door that makes them, answered 429 with Retry-After and the
IETF RateLimit fields; one team's burst never stops another's."""

import json
import re
import time

import pytest
from django.urls import reverse

from api.tests.shlink import shlink_client
from testing.factories import api_client, make_user
from tokens.services import token_create

pytestmark = pytest.mark.django_db


def a_fresh_minute() -> None:
    """The counts are of a minute of the clock (slingshot.throttle.admit): a
    test begun in its last seconds would count in two."""
    left = 60 - time.time() % 60
    if left < 10:
        time.sleep(left + 0.1)


@pytest.fixture
def three_a_minute(settings):
    settings.LINK_CREATE_RATE = settings.LINK_CREATE_TOKEN_RATE = "3/min"
    a_fresh_minute()


def limited(response, who: str) -> None:
    assert response.status_code == 429, response.content
    assert int(response["Retry-After"]) >= 1
    assert response["RateLimit-Policy"] == f'"links-per-{who}";q=3;w=60'
    assert re.fullmatch(rf'"links-per-{who}";r=0;t=\d+', response["RateLimit"])


def test_a_team_makes_its_share_then_waits_and_another_team_does_not(three_a_minute):
    api = api_client(make_user())
    for n in range(3):
        assert api.post("/api/v1/links", {"url": f"https://example.com/{n}"}, format="json").status_code == 201
    answer = api.post("/api/v1/links", {"url": "https://example.com/4"}, format="json")
    limited(answer, "team")
    assert "LINK_CREATE_RATE" in answer.json()["detail"]
    # Another person's team is counted on its own.
    assert (
        api_client(make_user()).post("/api/v1/links", {"url": "https://example.com/"}, format="json").status_code == 201
    )


def test_a_token_has_its_own_share_of_its_teams(settings, client):
    settings.LINK_CREATE_RATE, settings.LINK_CREATE_TOKEN_RATE = "10/min", "3/min"
    a_fresh_minute()
    person = make_user()
    api = api_client(person)  # a token of their personal team
    answers = [api.post("/api/v1/links", {"url": f"https://example.com/{n}"}, format="json") for n in range(4)]
    assert [a.status_code for a in answers[:3]] == [201, 201, 201]
    limited(answers[3], "token")
    # The team's other doors still have theirs: the dashboard's form.
    client.force_login(person)
    made = client.post(reverse("web:link-create"), {"url": "https://example.com/form", "redirect_status": 302})
    assert made.status_code == 302


def test_a_bulk_counts_each_of_its_links(three_a_minute):
    api = api_client(make_user())
    body = {"links": [{"url": f"https://example.com/{n}"} for n in range(4)]}
    limited(api.post("/api/v1/links/bulk", body, format="json"), "team")


def test_shlinks_and_yourls_apis_and_the_form_say_it_in_their_own_shapes(three_a_minute, client):
    person = make_user()
    shlink = shlink_client(person)
    for n in range(3):
        assert (
            shlink.post("/rest/v3/short-urls", {"longUrl": f"https://example.com/{n}"}, format="json").status_code
            == 200
        )
    answer = shlink.post("/rest/v3/short-urls", {"longUrl": "https://example.com/x"}, format="json")
    limited(answer, "team")
    assert answer["Content-Type"] == "application/problem+json" and answer.json()["status"] == 429

    other = make_user()
    _, raw = token_create(user=other, name="yourls", scope="write")
    codes = [
        json.loads(
            client.get(
                "/yourls-api.php",
                {"action": "shorturl", "signature": raw, "format": "json", "url": f"https://example.com/{n}"},
            ).content
        ).get("errorCode", "")
        for n in range(4)
    ]
    assert codes[3] == "429" and codes[:3] == ["", "", ""], codes

    third = make_user()
    client.force_login(third)
    for n in range(3):
        assert (
            client.post(
                reverse("web:link-create"), {"url": f"https://example.com/{n}", "redirect_status": 302}
            ).status_code
            == 302
        )
    page = client.post(reverse("web:link-create"), {"url": "https://example.com/x", "redirect_status": 302})
    limited(page, "team")
    assert b"LINK_CREATE_RATE" in page.content


def test_with_no_rate_set_nothing_is_counted(settings):
    settings.LINK_CREATE_RATE = ""
    api = api_client(make_user())
    assert all(
        api.post("/api/v1/links", {"url": f"https://example.com/{n}"}, format="json").status_code == 201
        for n in range(5)
    )

"""A link's `health` in /api/v1/links and the `broken` filter: null before
the first check, the last check after it, and another team's health never
seen."""

import pytest
from django.utils import timezone

from health.models import Reason
from health.probe import Outcome
from health.services import record
from testing.factories import make_link

pytestmark = pytest.mark.django_db(transaction=True)


def checked(link, outcome: Outcome, at=None):
    return record(link=link, url=link.url, outcome=outcome, at=at or timezone.now())


GONE = Outcome(Reason.HTTP_4XX, 404, "answered 404 Not Found", "https://example.com/gone")
FINE = Outcome("", 200, "answered 200 OK", "https://example.com/")


def test_a_link_has_no_health_before_its_first_check_and_its_last_check_after(api, user):
    link = make_link(owner=user, url="https://example.com/gone")
    created = api.post("/api/v1/links", {"url": "https://example.com/new"}, format="json")
    assert created.status_code == 201 and created.json()["health"] is None
    assert api.get(f"/api/v1/links/{link.slug}").json()["health"] is None

    health = checked(link, GONE)

    shown = api.get(f"/api/v1/links/{link.slug}").json()["health"]
    assert shown == {
        "status": "broken",
        "reason": "http_4xx",
        "http_status": 404,
        "detail": "answered 404 Not Found",
        "broken_since": shown["checked_at"],
        "checked_at": shown["checked_at"],
    }
    assert shown["checked_at"].startswith(health.checked_at.strftime("%Y-%m-%dT%H:%M:%S"))


def test_the_list_filters_on_broken_and_shows_each_links_health(api, user):
    broken = make_link(owner=user, url="https://example.com/gone")
    fine = make_link(owner=user, url="https://example.com/")
    unchecked = make_link(owner=user, url="https://example.com/new")
    checked(broken, GONE)
    checked(fine, FINE)

    def slugs(**query) -> list[str]:
        response = api.get("/api/v1/links", query)
        assert response.status_code == 200, response.content
        return sorted(item["slug"] for item in response.json()["results"])

    assert slugs(broken="true") == [broken.slug]
    assert slugs(broken="false") == sorted([fine.slug, unchecked.slug])
    assert slugs() == sorted([broken.slug, fine.slug, unchecked.slug])
    results = {item["slug"]: item["health"] for item in api.get("/api/v1/links").json()["results"]}
    assert results[broken.slug]["reason"] == "http_4xx"
    assert (results[fine.slug]["status"], results[fine.slug]["broken_since"]) == ("ok", None)
    assert results[unchecked.slug] is None


def test_a_bad_broken_value_is_a_400_naming_it(api):
    response = api.get("/api/v1/links", {"broken": "maybe"})
    assert response.status_code == 400 and set(response.json()) == {"broken"}


def test_another_teams_broken_links_and_their_health_are_not_seen(api, user, make_user, client_for):
    other = make_user()
    theirs = make_link(owner=other, url="https://example.com/theirs")
    checked(theirs, GONE)
    mine = make_link(owner=user, url="https://example.com/mine")

    assert api.get("/api/v1/links", {"broken": "true"}).json()["count"] == 0
    assert api.get(f"/api/v1/links/{theirs.slug}").status_code == 404
    assert [item["slug"] for item in api.get("/api/v1/links").json()["results"]] == [mine.slug]
    assert client_for(other).get("/api/v1/links", {"broken": "true"}).json()["results"][0]["slug"] == theirs.slug


def test_the_lists_queries_do_not_grow_with_its_links_health(api, user, django_assert_max_num_queries):
    for _ in range(2):
        checked(make_link(owner=user, url="https://example.com/gone"), GONE)
    with django_assert_max_num_queries(20) as few:
        api.get("/api/v1/links")
    for _ in range(6):
        checked(make_link(owner=user, url="https://example.com/gone"), GONE)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(api.get("/api/v1/links").json()["results"]) == 8

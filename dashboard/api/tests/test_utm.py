"""The API's utm_* fields: set into the destination's query when given (an
empty one takes its parameter out), the rest of the URL kept; read back
from the destination, however it got there."""

import pytest

from links.models import Link
from links.utm import utm_of, with_utm
from testing.factories import fresh

pytestmark = pytest.mark.django_db


def test_given_they_are_written_into_the_url_and_read_back(api):
    slug = fresh("utm")
    made = api.post(
        "/api/v1/links",
        {"url": "https://example.com/sale?ref=x#top", "slug": slug, "utm_source": "news", "utm_campaign": "spring"},
        format="json",
    )
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["url"] == "https://example.com/sale?ref=x&utm_source=news&utm_campaign=spring#top"
    assert (body["utm_source"], body["utm_medium"], body["utm_campaign"]) == ("news", "", "spring")
    changed = api.patch(f"/api/v1/links/{slug}", {"utm_campaign": "summer", "utm_source": ""}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["url"] == "https://example.com/sale?ref=x&utm_campaign=summer#top"
    assert Link.objects.get(slug=slug).url == changed.json()["url"]
    # Set in the url itself, they read back the same.
    direct = api.patch(f"/api/v1/links/{slug}", {"url": "https://example.com/?utm_medium=email"}, format="json")
    assert (direct.json()["utm_medium"], direct.json()["utm_campaign"]) == ("email", "")
    # Both in one request: the url given, the parameters set into it.
    both = api.patch(f"/api/v1/links/{slug}", {"url": "https://example.org/", "utm_term": "shoes"}, format="json")
    assert both.json()["url"] == "https://example.org/?utm_term=shoes"


def test_a_value_out_of_bounds_is_a_400_and_changes_nothing(api):
    slug = fresh("utb")
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug}, format="json")
    for value in ("x" * 201, 5, None):
        answer = api.patch(f"/api/v1/links/{slug}", {"utm_source": value}, format="json")
        assert answer.status_code == 400 and "utm_source" in answer.json(), (value, answer.content)
    assert Link.objects.get(slug=slug).url == "https://example.com/"


def test_with_utm_and_utm_of_round_trip():
    url = with_utm("https://e.com/p?a=1&utm_source=old#f", {"utm_source": "new", "utm_content": "b"})
    assert url == "https://e.com/p?a=1&utm_source=new&utm_content=b#f"
    assert utm_of(url) == {
        "utm_source": "new",
        "utm_medium": "",
        "utm_campaign": "",
        "utm_term": "",
        "utm_content": "b",
    }
    assert with_utm(url, {"utm_source": ""}, remove_empty=True) == "https://e.com/p?a=1&utm_content=b#f"
    assert with_utm(url, {"utm_source": ""}) == url

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from links.models import Link
from testing.factories import fresh, make_link

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_returns_every_field(api, settings):
    settings.EDGE_BASE_URL = "https://sho.rt"
    slug = fresh()
    response = api.post(
        "/api/v1/links",
        {
            "url": "https://example.com/x",
            "slug": slug,
            "title": "X",
            "tags": ["a", "b"],
            "redirect_status": 307,
            "expires_at": "2031-01-01T00:00:00Z",
            "forward_query": True,
            "is_active": True,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["short_url"] == f"https://sho.rt/{slug}"
    assert body["redirect_status"] == 307 and body["tags"] == ["a", "b"] and body["forward_query"] is True
    assert body["clicks"] == 0 and body["human_clicks"] == 0
    assert api.get(f"/api/v1/links/{slug}").json()["url"] == "https://example.com/x"


def test_generated_slug_is_7_base62_characters(api):
    body = api.post("/api/v1/links", {"url": "https://example.com/"}, format="json").json()
    assert len(body["slug"]) == 7 and body["slug"].isalnum()


@pytest.mark.parametrize(
    "url, message",
    [
        ("javascript:alert(1)", "Only http and https"),
        ("data:text/html;base64,PHNjcmlwdD4=", "Only http and https"),
        ("file:///etc/passwd", "Only http and https"),
        ("mailto:a@example.com", "Only http and https"),
        ("https://example.com/a\nb", "control characters"),
        ("https://example.com/\x07", "control characters"),
        ("http://", "needs a host"),
        ("example.com/no-scheme", "Only http and https"),
        ("https://example.com/" + "x" * 2049, "longer than 2048"),
        ("", "may not be blank"),
    ],
)
def test_invalid_targets_are_400_with_a_message_for_url(api, url, message):
    response = api.post("/api/v1/links", {"url": url}, format="json")
    assert response.status_code == 400
    assert any(message in error for error in response.json()["url"]), response.json()


def test_a_link_back_to_the_edge_is_refused(api, settings):
    settings.EDGE_BASE_URL = "https://sho.rt"
    response = api.post("/api/v1/links", {"url": "https://SHO.RT/other"}, format="json")
    assert response.status_code == 400
    assert "point back" in response.json()["url"][0]


def test_blocklisted_domains_and_their_subdomains_are_refused(api, settings):
    settings.LINK_DOMAIN_BLOCKLIST = ["evil.example"]
    for url in ["https://evil.example/x", "http://WWW.Evil.Example./y"]:
        response = api.post("/api/v1/links", {"url": url}, format="json")
        assert response.status_code == 400
        assert response.json()["url"] == ["Links to evil.example are not allowed here."]
    assert api.post("/api/v1/links", {"url": "https://notevil.example/"}, format="json").status_code == 201


@pytest.mark.parametrize("slug", ["a b", "a/b", "ä", "x" * 65, "api", "Admin", "static", "healthz", "metrics"])
def test_invalid_or_reserved_slugs_are_400(api, slug):
    response = api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug}, format="json")
    assert response.status_code == 400
    assert "slug" in response.json()


def test_a_taken_slug_is_409(api, make_user, client_for):
    slug = fresh()
    assert api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug}, format="json").status_code == 201
    other = client_for(make_user())
    response = other.post("/api/v1/links", {"url": "https://example.org/", "slug": slug}, format="json")
    assert response.status_code == 409
    assert "already exists" in response.json()["slug"][0]


def test_another_users_link_is_404_for_every_method(api, make_user):
    theirs = make_link(owner=make_user(), url="https://example.com/", slug=fresh())
    path = f"/api/v1/links/{theirs.slug}"
    assert api.get(path).status_code == 404
    assert api.patch(path, {"title": "mine"}, format="json").status_code == 404
    assert api.delete(path).status_code == 404
    assert theirs.slug not in [link["slug"] for link in api.get("/api/v1/links").json()["results"]]
    assert Link.objects.get(pk=theirs.pk).title == ""


def test_superusers_see_every_link_and_staff_only_their_own(client_for, make_user):
    """A superuser's session reaches every team; a token, even a superuser's, its own team only."""
    theirs = make_link(owner=make_user(), url="https://example.com/", slug=fresh())
    staff = client_for(make_user(is_staff=True))
    for response in (
        staff.get(f"/api/v1/links/{theirs.slug}"),
        staff.get(f"/api/v1/links/{theirs.slug}/stats"),
        staff.patch(f"/api/v1/links/{theirs.slug}", {"title": "mine now"}, format="json"),
        staff.delete(f"/api/v1/links/{theirs.slug}"),
    ):
        assert response.status_code == 404
    assert theirs.slug not in [link["slug"] for link in staff.get("/api/v1/links").json()["results"]]
    superuser = make_user(is_staff=True, is_superuser=True)
    session = APIClient()
    session.force_login(superuser)
    assert session.get(f"/api/v1/links/{theirs.slug}").status_code == 200
    assert session.patch(f"/api/v1/links/{theirs.slug}", {"title": "checked"}, format="json").status_code == 200
    assert Link.objects.get(pk=theirs.pk).title == "checked"
    assert client_for(superuser).get(f"/api/v1/links/{theirs.slug}").status_code == 404  # the personal team's token
    boss = client_for(superuser, team=theirs.team)
    assert boss.patch(f"/api/v1/links/{theirs.slug}", {"title": "by token"}, format="json").status_code == 200


def test_partial_update_and_delete(api):
    slug = fresh()
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug}, format="json")
    response = api.patch(f"/api/v1/links/{slug}", {"is_active": False, "title": "off"}, format="json")
    assert response.status_code == 200 and response.json()["is_active"] is False
    assert api.patch(f"/api/v1/links/{slug}", {"url": "ftp://x"}, format="json").status_code == 400
    assert api.put(f"/api/v1/links/{slug}", {"url": "https://e.com/"}, format="json").status_code == 405
    assert api.delete(f"/api/v1/links/{slug}").status_code == 204
    assert api.get(f"/api/v1/links/{slug}").status_code == 404


def test_list_search_filter_order_and_paginate(api, user):
    now = timezone.now()
    for i in range(60):
        link = make_link(
            owner=user,
            url=f"https://example.com/{i}",
            slug=fresh("p"),
            title="needle" if i == 7 else "",
            tags=["even"] if i % 2 == 0 else [],
            is_active=i != 3,
        )
        Link.objects.filter(pk=link.pk).update(created_at=now - timedelta(hours=i))
    page = api.get("/api/v1/links").json()
    assert page["count"] == 60 and len(page["results"]) == 50 and page["next"]
    assert [r["url"] for r in page["results"][:2]] == ["https://example.com/0", "https://example.com/1"]
    assert [r["url"] for r in api.get("/api/v1/links?search=needle").json()["results"]] == ["https://example.com/7"]
    assert api.get("/api/v1/links?search=example.com/59").json()["count"] == 1
    assert api.get("/api/v1/links?tag=even").json()["count"] == 30
    assert api.get("/api/v1/links?is_active=false").json()["count"] == 1
    window = f"created_after={(now - timedelta(hours=10, minutes=30)).isoformat()}"
    assert (
        api.get("/api/v1/links", {"created_after": (now - timedelta(hours=10, minutes=30)).isoformat()}).json()["count"]
        == 11
    ), window
    oldest = api.get("/api/v1/links?ordering=created_at").json()["results"][0]
    assert oldest["url"] == "https://example.com/59"
    assert api.get("/api/v1/links?ordering=-clicks").status_code == 200


def test_bulk_create_reports_each_item(api):
    taken = fresh()
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": taken}, format="json")
    items = [
        {"url": "https://example.com/ok1"},
        {"url": "javascript:alert(1)"},
        {"url": "https://example.com/ok2", "slug": taken},
        {"url": "https://example.com/ok3", "slug": fresh()},
    ]
    response = api.post("/api/v1/links/bulk", {"links": items}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["created"] == 2 and body["failed"] == 2
    assert [r["status"] for r in body["results"]] == [201, 400, 409, 201]
    assert "url" in body["results"][1]["errors"]
    assert body["results"][3]["link"]["url"] == "https://example.com/ok3"


def test_bulk_create_is_capped(api, settings):
    response = api.post("/api/v1/links/bulk", {"links": [{"url": "https://e.com/"}] * 1001}, format="json")
    assert response.status_code == 400


def test_bulk_create_of_1000_links(api, user):
    items = [{"url": f"https://example.com/{i}"} for i in range(1000)]
    response = api.post("/api/v1/links/bulk", {"links": items}, format="json")
    assert response.json()["created"] == 1000
    assert Link.objects.filter(owner=user).count() == 1000


def test_concurrent_generated_slugs_never_collide(user, settings):
    # Two characters leave 3,844 slugs, so 8 threads x 40 links collide often
    # and must retry; a collision that slipped through would raise or duplicate.
    settings.LINK_SLUG_LENGTH = 2
    errors, barrier = [], threading.Barrier(8)

    def worker():
        try:
            barrier.wait()
            for i in range(40):
                make_link(owner=user, url=f"https://example.com/{i}")
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    slugs = list(Link.objects.filter(owner=user).values_list("slug", flat=True))
    assert len(slugs) == 320 == len(set(slugs))


def test_list_parameters_parse_in_the_api_and_filter_in_the_selector(api, user):
    now = timezone.now()
    spring = make_link(
        owner=user, url="https://example.com/spring", slug=fresh("s"), title="Spring sale", tags=["sale"]
    )
    summer = make_link(
        owner=user,
        url="https://example.com/summer",
        slug=fresh("u"),
        title="Summer sale",
        tags=["sale"],
        is_active=False,
    )
    Link.objects.filter(pk=summer.pk).update(created_at=now - timedelta(days=2))

    def slugs(**params):
        response = api.get("/api/v1/links", params)
        assert response.status_code == 200, response.content
        return [link["slug"] for link in response.json()["results"]]

    assert slugs(search='"spring sale"') == [spring.slug]
    assert slugs(search="sale,summer") == [summer.slug]  # commas separate words too
    assert slugs(search="sale", ordering="created_at") == [summer.slug, spring.slug]
    assert slugs(search="") == [spring.slug, summer.slug]  # an empty search matches everything
    empty = api.get("/api/v1/links", {"tag": "", "is_active": "", "created_after": "", "ordering": ""})
    assert empty.status_code == 400 and set(empty.json()) == {"tag", "is_active", "created_after", "ordering"}
    assert slugs(is_active="false") == [summer.slug] and slugs(is_active="true", tag="sale") == [spring.slug]
    assert slugs(created_before=(now - timedelta(days=1)).isoformat()) == [summer.slug]
    assert slugs(ordering="-clicks,created_at") == [summer.slug, spring.slug]


@pytest.mark.parametrize(
    "params, field",
    [
        ({"ordering": "title"}, "ordering"),
        ({"ordering": "clicks,-url"}, "ordering"),
        ({"ordering": "clicks, created_at"}, "ordering"),
        ({"ordering": "clicks,"}, "ordering"),
        ({"is_active": "maybe"}, "is_active"),
        ({"created_after": "yesterday"}, "created_after"),
        ({"created_before": "0001-01-01T00:00:00+01:00"}, "created_before"),
        ({"search": "a\x00b"}, "search"),
        ({"tag": "a\x00b"}, "tag"),
        ({"page": "9"}, "detail"),
    ],
)
def test_bad_list_parameters_are_400_with_a_message(api, params, field):
    response = api.get("/api/v1/links", params)
    assert response.status_code in (400, 404) and field in response.json(), response.content


def test_bulk_create_items_of_the_wrong_shape_or_repeated(api, user):
    slug = fresh()
    items = [
        {"url": "https://example.com/1", "slug": slug},
        {"url": "https://example.com/2", "slug": slug},
        {"url": "https://example.com/3", "tags": "not a list"},
        {"url": "https://example.com/4", "redirect_status": 303},
        {"url": "https://example.com/5", "title": "last"},
    ]
    body = api.post("/api/v1/links/bulk", {"links": items}, format="json").json()
    assert [(r["index"], r["status"]) for r in body["results"]] == [(0, 201), (1, 409), (2, 400), (3, 400), (4, 201)]
    assert body["results"][1]["errors"] == {"slug": ["Link with this Slug already exists."]}
    assert "tags" in body["results"][2]["errors"]
    assert body["results"][3]["errors"] == {"redirect_status": ['"303" is not a valid choice.']}
    assert (body["created"], body["failed"]) == (2, 3)
    assert body["results"][4]["link"]["clicks"] == 0
    assert set(Link.objects.filter(owner=user).values_list("url", flat=True)) == {
        "https://example.com/1",
        "https://example.com/5",
    }


def test_times_with_any_offset_are_taken_in_utc(api):
    # PostgreSQL refuses offsets beyond ±15:59; the API's times arrive in UTC.
    response = api.post(
        "/api/v1/links", {"url": "https://example.com/", "expires_at": "2030-01-01T00:00:00+16:00"}, format="json"
    )
    assert response.status_code == 201 and response.json()["expires_at"] == "2029-12-31T08:00:00Z"
    slug = response.json()["slug"]
    response = api.patch(f"/api/v1/links/{slug}", {"expires_at": "2030-01-01T00:00:00-16:30"}, format="json")
    assert response.status_code == 200 and response.json()["expires_at"] == "2030-01-01T16:30:00Z"
    assert api.get("/api/v1/links", {"created_before": "2000-01-01T00:00:00+16:00"}).json()["count"] == 0


def test_a_trailing_slash_is_the_same_path_without_it(api):
    created = api.post("/api/v1/links/", {"url": "https://example.com/slash", "slug": fresh("sl")}, format="json")
    assert created.status_code == 201, created.content
    slug = created.json()["slug"]
    listed = api.get("/api/v1/links/", {"search": slug})
    assert listed.status_code == 200 and [link["slug"] for link in listed.json()["results"]] == [slug]
    assert listed.json() == api.get("/api/v1/links", {"search": slug}).json()
    assert api.get(f"/api/v1/links/{slug}/").json()["url"] == "https://example.com/slash"
    assert api.patch(f"/api/v1/links/{slug}/", {"title": "Slashed"}, format="json").json()["title"] == "Slashed"
    assert api.get(f"/api/v1/links/{slug}/stats/").status_code == 200
    missing = api.get("/api/v1/nothing-here/")
    assert missing.status_code == 404 and missing["Content-Type"].startswith("application/json")
    assert api.delete(f"/api/v1/links/{slug}/").status_code == 204
    assert not Link.objects.filter(slug=slug).exists()

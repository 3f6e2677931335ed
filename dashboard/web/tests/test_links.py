"""Links pages: list, forms with the service's messages, toggle, delete, export, QR codes."""

import csv
import io
from datetime import datetime, timedelta, timezone

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from links.models import Link
from testing.factories import fresh, make_link

from .conftest import import_clicks

pytestmark = pytest.mark.django_db(transaction=True)


def test_pages_need_sign_in(client):
    for name, args in [
        ("web:overview", []),
        ("web:link-list", []),
        ("web:link-create", []),
        ("web:tokens", []),
        ("web:link-detail", ["abc"]),
        ("web:link-qr", ["abc", "png"]),
    ]:
        response = client.get(reverse(name, args=args))
        assert response.status_code == 302 and response["Location"].startswith("/sign-in/"), name


def test_create_shows_the_same_messages_as_the_api(signed_in, user):
    taken = make_link(owner=user, url="https://example.com/", slug=fresh())
    api = APIClient()
    api.force_authenticate(user)
    for data in [
        {"url": "ftp://example.com/file", "slug": fresh()},
        {"url": "https://example.com/", "slug": "admin"},
        {"url": "https://example.com/", "slug": taken.slug},
        {"url": "https://example.com/", "slug": fresh(), "tags": "ok,not ok"},
    ]:
        page = signed_in.post(reverse("web:link-create"), {**data, "redirect_status": "302"})
        assert page.status_code == 200
        body = api.post(
            "/api/v1/links",
            {**data, "tags": data.get("tags", "").split(",") if data.get("tags") else []},
            format="json",
        ).json()
        ((field, messages),) = body.items() if "detail" not in body else body["detail"].items()
        assert page.context["form"].errors[field] == messages, data


def test_create_edit_toggle_delete(signed_in, user):
    slug = fresh()
    response = signed_in.post(
        reverse("web:link-create"),
        {
            "url": "https://example.com/spring",
            "slug": slug,
            "title": "Spring",
            "tags": "news, sale",
            "redirect_status": "301",
            "is_active": "on",
        },
    )
    assert response.status_code == 302 and response["Location"] == reverse("web:link-detail", args=[slug])
    link = Link.objects.get(slug=slug)
    assert (link.owner, link.tags, link.redirect_status, link.is_active) == (user, ["news", "sale"], 301, True)

    edit = reverse("web:link-edit", args=[slug])
    assert signed_in.get(edit).context["form"].initial["title"] == "Spring"
    response = signed_in.post(
        edit,
        {
            "url": "https://example.com/summer",
            "slug": slug,
            "title": "Summer",
            "tags": "news",
            "redirect_status": "302",
            "is_active": "on",
        },
    )
    assert response.status_code == 302
    link.refresh_from_db()
    assert (link.url, link.title, link.tags, link.redirect_status) == (
        "https://example.com/summer",
        "Summer",
        ["news"],
        302,
    )

    signed_in.post(reverse("web:link-toggle", args=[slug]))
    link.refresh_from_db()
    assert link.is_active is False
    signed_in.post(reverse("web:link-toggle", args=[slug]))
    link.refresh_from_db()
    assert link.is_active is True

    confirm = signed_in.get(reverse("web:link-delete", args=[slug]))
    assert b"cannot be undone" in confirm.content and Link.objects.filter(slug=slug).exists()
    assert signed_in.post(reverse("web:link-delete", args=[slug])).status_code == 302
    assert not Link.objects.filter(slug=slug).exists()


def test_other_peoples_links_are_not_found(signed_in, make_user):
    theirs = make_link(owner=make_user(), url="https://example.com/", slug=fresh())
    for name in ("web:link-detail", "web:link-edit", "web:link-delete"):
        assert signed_in.get(reverse(name, args=[theirs.slug])).status_code == 404
    assert signed_in.post(reverse("web:link-toggle", args=[theirs.slug])).status_code == 404
    assert signed_in.get(reverse("web:link-list")).context["page"].paginator.count == 0


def test_forms_refuse_posts_without_csrf_token(user):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(reverse("web:link-create"), {"url": "https://example.com/", "redirect_status": "302"})
    assert response.status_code == 403
    assert not Link.objects.filter(owner=user).exists()


def test_list_search_filter_sort_and_query_count(signed_in, user, django_assert_max_num_queries):
    quiet = make_link(owner=user, url="https://example.com/quiet", slug=fresh("q"), tags=["a"])
    busy = make_link(owner=user, url="https://example.com/busy", slug=fresh("b"), title="Busy one", tags=["b"])
    off = make_link(owner=user, url="https://example.com/off", slug=fresh("o"), is_active=False, tags=["a"])
    for i in range(60):
        make_link(owner=user, url=f"https://example.com/{i}", tags=["bulk"])
    import_clicks(busy, 3)
    import_clicks(quiet, 1)

    def slugs(**params):
        return [link.slug for link in signed_in.get(reverse("web:link-list"), params).context["page"]]

    # session, user, their teams (the navigation), their role in the current one, count, the page's ids,
    # its rows with click totals, the domains of the filter
    with django_assert_max_num_queries(8):
        response = signed_in.get(reverse("web:link-list"))
    assert response.context["page"].paginator.count == 63 and len(response.context["page"]) == 50
    assert slugs(q="busy") == [busy.slug] and slugs(q="one example.com/busy") == [busy.slug]
    assert slugs(tag="a") == [off.slug, quiet.slug]
    assert slugs(tag="a", status="disabled") == [off.slug]
    assert slugs(sort="-clicks")[:2] == [busy.slug, quiet.slug]
    page = signed_in.get(reverse("web:link-list"), {"sort": "-clicks"})
    assert b'data-copy="http' in page.content and b">3</td>" in page.content


def test_export_is_the_current_filter(signed_in, user):
    tagged = make_link(owner=user, url="https://example.com/t", slug=fresh(), tags=["x", "y"], title="T")
    make_link(owner=user, url="https://example.com/u", slug=fresh())
    response = signed_in.get(reverse("web:link-export"), {"tag": "x"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(row["slug"], row["tags"], row["title"], row["is_active"]) for row in rows] == [
        (tagged.slug, "x,y", "T", "true")
    ]


def test_detail_shows_stats_with_a_bounded_number_of_queries(signed_in, user, django_assert_max_num_queries):
    link = make_link(owner=user, url="https://example.com/d", slug=fresh())
    import_clicks(link, 2)
    import_clicks(link, 1, ua="curl/8.0")
    url = reverse("web:link-detail", args=[link.slug])
    # session, user, their teams (the navigation), link with their role, all-time totals, series, range
    # totals, breakdowns, recent clicks, the time zone's preferences, the destination's last check; and
    # the BEGIN, SET TRANSACTION and COMMIT of the one snapshot the totals, the report and its recent
    # clicks are read in
    with django_assert_max_num_queries(14):
        response = signed_in.get(url)
    assert response.context["stats"].clicks == 2 and response.context["preset"] == "30d"
    chart = response.context["chart"]["data"]
    assert len(chart["clicks"]) == 30 and chart["clicks"][-1] == 2 and sum(chart["clicks"]) == 2
    assert len(response.context["recent"]) == 2  # the bot's click is left out, as in the figures
    assert b"news.example.org" in response.content
    # The click made with curl is a bot's: the page says it left it out, and how to see it.
    assert response.context["stats"].totals.bots == 1 and b'id="bots-left-out"' in response.content
    assert "include_bots=true" in response.context["bots_href"]
    with_bots = signed_in.get(url, {"include_bots": "true", "interval": "hour"})
    assert with_bots.context["stats"].clicks == 3 and b'id="bots-left-out"' not in with_bots.content
    bad = signed_in.get(url, {"interval": "minute"})
    assert "interval" in bad.context["errors"] and bad.context["stats"].clicks == 2  # defaults shown instead


def test_qr_codes(signed_in, user):
    link = make_link(owner=user, url="https://example.com/qr", slug=fresh())
    png = signed_in.get(reverse("web:link-qr", args=[link.slug, "png"]), {"download": "1"})
    assert png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
    assert png["Content-Disposition"] == f'attachment; filename="{link.slug}.png"'
    svg = signed_in.get(reverse("web:link-qr", args=[link.slug, "svg"]))
    assert svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content


def test_list_filters_cost_no_more_queries(signed_in, user, django_assert_max_num_queries):
    for i in range(70):
        make_link(
            owner=user,
            url=f"https://example.com/spring/{i}",
            title=f"Spring sale {i}",
            tags=["sale"],
            is_active=i % 5 != 0,
        )
    make_link(owner=user, url="https://example.com/winter", title="Winter sale", tags=["sale"])
    params = {"q": '"spring sale" example.com', "tag": "sale", "status": "active", "sort": "-clicks", "page": "2"}
    # session, user, their teams (the navigation), their role in the current one, count, the page's ids,
    # its rows with click totals, the domains of the filter
    with django_assert_max_num_queries(8):
        response = signed_in.get(reverse("web:link-list"), params)
    page = response.context["page"]
    assert (page.paginator.count, page.number, len(page)) == (56, 2, 6)
    assert all(link.title.startswith("Spring sale") and link.is_active for link in page)


def test_bad_list_parameters_are_left_out(signed_in, user):
    make_link(owner=user, url="https://example.com/", slug=fresh())
    response = signed_in.get(
        reverse("web:link-list"), {"sort": "nonsense", "status": "maybe", "q": "a\x00b", "tag": "a\x00b"}
    )
    assert response.status_code == 200 and response.context["page"].paginator.count == 1


@pytest.mark.parametrize(
    "params, field",
    [
        ({"to": "9999-12-31"}, "to"),  # its last day ends in the year 10000
        ({"from": "2030-01-02", "to": "2030-01-01"}, "to"),
        ({"interval": "minute"}, "interval"),
        ({"from": "yesterday"}, "from"),
        ({"from": "2020-01-01", "to": "2030-01-01", "interval": "hour"}, "interval"),  # too many points
    ],
)
def test_detail_refuses_ranges_it_cannot_show(signed_in, user, params, field):
    link = make_link(owner=user, url="https://example.com/d", slug=fresh())
    response = signed_in.get(reverse("web:link-detail", args=[link.slug]), params)
    assert response.status_code == 200 and list(response.context["errors"]) == [field]
    span = response.context["span"]  # the defaults instead
    assert (span.interval, span.end - span.start) == ("day", timedelta(days=30))
    assert b'class="notice error" role="alert"' in response.content


def test_detail_range_as_asked(signed_in, user):
    link = make_link(owner=user, url="https://example.com/d", slug=fresh())
    response = signed_in.get(
        reverse("web:link-detail", args=[link.slug]),
        {"interval": "hour", "from": "2030-01-01", "to": "2030-01-02", "include_bots": "true"},
    )
    span = response.context["span"]
    assert response.context["errors"] == {} and response.context["preset"] == "custom"
    assert (span.start, span.end, span.interval, span.include_bots) == (
        datetime(2030, 1, 1, tzinfo=timezone.utc),
        datetime(2030, 1, 3, tzinfo=timezone.utc),
        "hour",
        True,
    )
    assert len(response.context["chart"]["data"]["labels"]) == 1  # the future is not drawn
    today = signed_in.get(reverse("web:link-detail", args=[link.slug]), {"range": "today"}).context["span"]
    assert (today.interval, today.end - today.start) == ("hour", timedelta(hours=24))


def test_an_expiry_postgresql_cannot_store_is_a_form_error(signed_in, user):
    response = signed_in.post(
        reverse("web:link-create"),
        {
            "url": "https://example.com/",
            "slug": fresh(),
            "redirect_status": "302",
            "expires_at": "2030-01-01T00:00:00+16:00",
        },
    )
    assert response.status_code == 200
    assert response.context["form"].errors["expires_at"] == ["The UTC offset must be within ±15:59."]
    assert not Link.objects.filter(owner=user).exists()


def test_bulk_actions_on_a_selection(signed_in, user, make_user):
    mine = [make_link(owner=user, url=f"https://example.com/b{i}", slug=fresh()) for i in range(3)]
    theirs = make_link(owner=make_user(), url="https://example.com/t", slug=fresh())
    bulk = reverse("web:link-bulk")
    two = [str(mine[0].pk), str(mine[1].pk), str(theirs.pk), "x1"]  # another person's link and junk are ignored
    assert signed_in.post(bulk, {"action": "tag", "tag": "spring", "selected": two}).status_code == 302
    assert {link.slug for link in Link.objects.filter(tags__contains=["spring"])} == {mine[0].slug, mine[1].slug}
    signed_in.post(bulk, {"action": "untag", "tag": "spring", "selected": [str(mine[0].pk)]})
    signed_in.post(bulk, {"action": "disable", "selected": two})
    assert list(Link.objects.filter(is_active=False).order_by("slug").values_list("slug", flat=True)) == sorted(
        [mine[0].slug, mine[1].slug]
    )
    signed_in.post(bulk, {"action": "enable", "selected": [str(mine[0].pk)]})
    assert Link.objects.get(pk=mine[0].pk).tags == [] and Link.objects.get(pk=mine[0].pk).is_active
    exported = signed_in.post(bulk, {"action": "export", "selected": two})
    rows = list(csv.reader(io.StringIO(b"".join(exported.streaming_content).decode())))
    slug = rows[0].index("slug")
    assert sorted(row[slug] for row in rows[1:]) == sorted([mine[0].slug, mine[1].slug])
    # Deleting asks first; only the confirmation deletes.
    asked = signed_in.post(bulk, {"action": "delete", "selected": two})
    assert asked.status_code == 200 and b"Yes, delete 2 links" in asked.content
    assert Link.objects.filter(owner=user).count() == 3
    signed_in.post(bulk, {"action": "delete", "confirm": "true", "selected": two})
    assert list(Link.objects.filter(owner=user).values_list("slug", flat=True)) == [mine[2].slug]
    assert Link.objects.filter(pk=theirs.pk).exists()
    # Nothing selected, or a tag missing: a message, nothing changed.
    page = signed_in.post(bulk, {"action": "tag", "selected": [str(mine[2].pk)]}, follow=True)
    assert b"Give the tag" in page.content
    page = signed_in.post(bulk, {"action": "disable"}, follow=True)
    assert b"Select at least one link" in page.content and Link.objects.get(pk=mine[2].pk).is_active

"""A team's broken links on its pages: the mark in the links list with the
reason and since when, the list's Destination filter (and the export's),
the link's page with its last check; another team's never shown."""

import csv
import io
from datetime import datetime, timezone

import pytest
from django.urls import reverse

from health.models import Reason
from health.probe import Outcome
from health.services import record
from testing.factories import fresh, make_link

pytestmark = pytest.mark.django_db(transaction=True)

BROKE_AT = datetime(2026, 11, 20, 8, 30, tzinfo=timezone.utc)
GONE = Outcome(Reason.HTTP_4XX, 404, "answered 404 Not Found", "https://example.com/gone")
FINE = Outcome("", 200, "answered 200 OK", "https://example.com/fine")


def checked(link, outcome: Outcome, at: datetime = BROKE_AT):
    return record(link=link, url=link.url, outcome=outcome, at=at)


def test_the_list_marks_broken_links_and_filters_them(signed_in, user, django_assert_max_num_queries):
    broken = make_link(owner=user, url="https://example.com/gone", slug=fresh("br"))
    fine = make_link(owner=user, url="https://example.com/fine", slug=fresh("ok"))
    unchecked = make_link(owner=user, url="https://example.com/new", slug=fresh("nw"))
    checked(broken, GONE)
    checked(fine, FINE)
    for i in range(8):
        checked(make_link(owner=user, url=f"https://example.com/gone/{i}"), GONE)

    # As without health: session, user, their teams, their role, count, the page's ids, its rows (with
    # their last checks), the domains of the filter.
    with django_assert_max_num_queries(8):
        page = signed_in.get(reverse("web:link-list"))
    html = page.content.decode()
    assert html.count('class="broken"') == 9
    assert 'Broken: 4xx answer (404) since <time datetime="2026-11-20T08:30:00+00:00">2026-11-20</time>' in html
    assert 'title="answered 404 Not Found"' in html

    def slugs(**params) -> set[str]:
        return {link.slug for link in signed_in.get(reverse("web:link-list"), params).context["page"]}

    assert len(slugs(health="broken")) == 9 and broken.slug in slugs(health="broken")
    assert not {fine.slug, unchecked.slug} & slugs(health="broken")
    assert slugs(health="broken", q="example.com/gone/3") == {"".join(slugs(q="example.com/gone/3"))}
    filtered = signed_in.get(reverse("web:link-list"), {"health": "broken"})
    assert filtered.context["filtered"] and "9 links match" in filtered.content.decode()


def test_a_health_filter_that_does_not_parse_is_left_out(signed_in, user):
    link = make_link(owner=user, url="https://example.com/", slug=fresh())
    response = signed_in.get(reverse("web:link-list"), {"health": "maybe\x00"})
    assert response.status_code == 200 and [item.slug for item in response.context["page"]] == [link.slug]


def test_the_export_keeps_to_the_broken_filter(signed_in, user):
    broken = make_link(owner=user, url="https://example.com/gone", slug=fresh())
    make_link(owner=user, url="https://example.com/fine", slug=fresh())
    checked(broken, GONE)
    response = signed_in.get(reverse("web:link-export"), {"health": "broken"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row["slug"] for row in rows] == [broken.slug]


def test_the_link_page_shows_its_last_check(signed_in, user, settings):
    link = make_link(owner=user, url="https://example.com/gone", slug=fresh())
    page = reverse("web:link-detail", args=[link.slug])
    settings.LINK_HEALTH_HOURS = 24
    assert "Not checked yet" in signed_in.get(page).content.decode()
    settings.LINK_HEALTH_HOURS = 0
    assert "are not checked on this server" in signed_in.get(page).content.decode()

    checked(link, Outcome(Reason.HTTP_4XX, 404, "answered 404 Not Found", "https://example.com/moved/gone"))
    html = signed_in.get(page).content.decode()
    assert 'id="link-broken"' in html and "(4xx answer, 404: answered 404 Not Found)" in html
    assert '<time datetime="2026-11-20T08:30:00+00:00">2026-11-20 08:30</time>' in html
    assert (
        "Broken when last checked" in html
        and '(after redirects, at <span class="target">https://example.com/moved/gone</span>)' in html
    )

    checked(link, FINE, at=datetime(2026, 11, 21, tzinfo=timezone.utc))
    html = signed_in.get(page).content.decode()
    assert 'id="link-broken"' not in html and "Working when last checked" in html


def test_another_teams_broken_links_are_not_shown(signed_in, user, make_user):
    other = make_user()
    theirs = make_link(owner=other, url="https://example.com/theirs", slug=fresh("th"))
    checked(theirs, GONE)
    make_link(owner=user, url="https://example.com/mine", slug=fresh("mn"))

    listed = signed_in.get(reverse("web:link-list"), {"health": "broken"})
    assert listed.context["page"].paginator.count == 0 and theirs.slug not in listed.content.decode()
    assert signed_in.get(reverse("web:link-detail", args=[theirs.slug])).status_code == 404

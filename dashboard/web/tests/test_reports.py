"""The link page's report: presets, filters by a breakdown row, the person's
time zone, the live version, the clicks export; and the trust pages (errors)."""

import csv
import io
import json
import re
from datetime import datetime, timedelta, timezone

import pytest
from django.urls import reverse

from links.selectors import link_state
from testing.factories import fresh, make_link
from web.models import Preferences

from .conftest import import_clicks

pytestmark = pytest.mark.django_db(transaction=True)

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"


def test_presets_give_whole_days_up_to_today(signed_in, user):
    link = make_link(owner=user, url="https://example.com/p", slug=fresh())
    url = reverse("web:link-detail", args=[link.slug])
    for preset, days, interval in (("7d", 7, "day"), ("90d", 90, "day"), ("today", 1, "hour")):
        page = signed_in.get(url, {"range": preset})
        span = page.context["span"]
        assert page.context["preset"] == preset and span.interval == interval
        assert span.end - timedelta(days=days) <= span.start <= span.end - timedelta(days=days - 1)
        assert f'aria-current="page" data-preset="{preset}"'.encode() in page.content
    year = signed_in.get(url, {"range": "12m"}).context["span"]
    assert (year.interval, year.start.day) == ("week", 1)
    everything = signed_in.get(url, {"range": "all"}).context["span"]
    assert everything.start <= link.created_at < everything.end


def test_totals_compare_with_the_period_before(signed_in, user):
    link = make_link(owner=user, url="https://example.com/c", slug=fresh())
    now = datetime.now(timezone.utc)
    import_clicks(link, 2, when=now - timedelta(days=10))  # the 7 days before the last 7
    import_clicks(link, 3)
    page = signed_in.get(reverse("web:link-detail", args=[link.slug]), {"range": "7d"})
    changes = {name: change for name, _, change in page.context["totals_rows"]}
    assert (changes["clicks"].current, changes["clicks"].previous) == (3, 2)
    assert round(changes["clicks"].percent) == 50 and changes["clicks"].direction == "up"
    assert b'id="total-clicks">3<' in page.content


def test_a_breakdown_row_filters_the_whole_report(signed_in, user):
    link = make_link(owner=user, url="https://example.com/f", slug=fresh())
    import_clicks(link, 2)  # Firefox
    import_clicks(link, 3, ua=CHROME)
    url = reverse("web:link-detail", args=[link.slug])
    page = signed_in.get(url)
    browsers = next(b for b in page.context["breakdowns"] if b.dimension == "browser")
    chrome = next(row for row in browsers.rows if row.value == "Chrome")
    assert (chrome.clicks, round(chrome.percent)) == (3, 60) and "browser=Chrome" in chrome.href
    filtered = signed_in.get(url + chrome.href)
    assert filtered.context["stats"].clicks == 3 and len(filtered.context["recent"]) == 3
    oses = next(b for b in filtered.context["breakdowns"] if b.dimension == "browser")
    assert [(row.value, row.clicks, row.active) for row in oses.rows] == [("Chrome", 3, True)]
    assert [item.label for item in filtered.context["filters"]] == ["Chrome"]
    assert "browser" not in filtered.context["filters"][0].remove_href
    # The filter survives a change of range, and the export takes it along.
    assert "browser=Chrome" in filtered.context["presets"][0][2]
    assert "browser=Chrome" in filtered.context["export"]["csv"]


def test_countries_read_as_names_with_flags():
    from web import reports

    assert reports.value_label("country", "DE") == "Germany" and reports.flag("DE") == "\U0001f1e9\U0001f1ea"
    assert reports.value_label("country", "unknown") == "Unknown" and reports.flag("unknown") == ""
    assert reports.value_label("referer_host", "") == "Direct (no referrer)"


def test_days_are_days_of_the_persons_zone(client, user):
    Preferences.objects.create(user=user, time_zone="America/New_York")
    client.post(reverse("web:sign-in"), {"username": user.username, "password": "correct horse battery staple"})
    link = make_link(owner=user, url="https://example.com/z", slug=fresh())
    page = client.get(reverse("web:link-detail", args=[link.slug]), {"from": "2030-01-01", "to": "2030-01-01"})
    span = page.context["span"]
    assert span.start == datetime(2030, 1, 1, 5, tzinfo=timezone.utc)  # midnight in New York
    assert span.end - span.start == timedelta(days=1) and page.context["zone_name"] == "America/New_York"
    assert b"Time (America/New_York)" in page.content


def test_the_browsers_zone_is_taken_once_and_a_choice_wins(signed_in, user):
    url = reverse("web:time-zone")
    assert b'id="zone-guess"' in signed_in.get(reverse("web:overview")).content
    guess = signed_in.post(url, {"time_zone": "Asia/Kolkata", "guess": "1"})
    assert guess.json() == {"time_zone": "Asia/Kolkata"}
    assert b'id="zone-guess"' not in signed_in.get(reverse("web:overview")).content
    assert signed_in.post(url, {"time_zone": "Europe/Paris"}).status_code == 302
    assert signed_in.post(url, {"time_zone": "Asia/Tokyo", "guess": "1"}).json() == {"time_zone": "Europe/Paris"}
    assert Preferences.objects.get(user=user).time_zone == "Europe/Paris"
    bad = signed_in.post(url, {"time_zone": "Mars/Olympus", "guess": "1"})
    assert bad.status_code == 400 and "time_zone" in bad.json()["errors"]


def test_live_version_changes_with_the_clicks(signed_in, user, make_user):
    link = make_link(owner=user, url="https://example.com/l", slug=fresh())
    live = reverse("web:link-live", args=[link.slug])
    assert signed_in.get(live).json()["version"] == 0
    import_clicks(link, 2)
    assert signed_in.get(live).json()["version"] == 2
    report = signed_in.get(reverse("web:link-report", args=[link.slug]))
    assert b'id="total-clicks">2<' in report.content and b"<html" not in report.content
    theirs = make_link(owner=make_user(), url="https://example.com/t", slug=fresh())
    assert signed_in.get(reverse("web:link-live", args=[theirs.slug])).status_code == 404


def test_export_of_the_reports_clicks(signed_in, user):
    link = make_link(owner=user, url="https://example.com/e", slug=fresh())
    import_clicks(link, 2)
    import_clicks(link, 1, ua='=HYPERLINK("https://evil.example")')
    import_clicks(link, 1, ua="curl/8.0")
    page = signed_in.get(reverse("web:link-detail", args=[link.slug]), {"include_bots": "true"})
    response = signed_in.get(page.context["export"]["csv"])
    assert response["Content-Type"].startswith("text/csv") and response.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 4 and {row["slug"] for row in rows} == {link.slug}
    assert sorted(row["user_agent"][:1] for row in rows) == ["'", "M", "M", "c"]  # the formula neutralised
    lines = b"".join(signed_in.get(page.context["export"]["jsonl"]).streaming_content).decode().splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["slug"] == link.slug
    humans = signed_in.get(reverse("web:link-detail", args=[link.slug])).context["export"]["csv"]
    assert len(b"".join(signed_in.get(humans).streaming_content).splitlines()) == 1 + 3  # header, no bot
    export = reverse("web:link-clicks-export", args=[link.slug])
    assert signed_in.get(export, {"format": "xml"}).status_code == 400
    assert signed_in.get(export, {"format": "csv", "from": "soon"}).status_code == 400


def test_link_state():
    from links.models import Link

    now = datetime.now(timezone.utc)
    assert link_state(Link(is_active=True), now=now) == "active"
    assert link_state(Link(is_active=True, expires_at=now - timedelta(seconds=1)), now=now) == "expired"
    assert link_state(Link(is_active=False, expires_at=now - timedelta(seconds=1)), now=now) == "disabled"


def test_list_shows_the_true_state_and_row_actions(signed_in, user):
    expired = make_link(owner=user, url="https://example.com/x", slug=fresh())
    expired.expires_at = datetime.now(timezone.utc) - timedelta(hours=1)
    expired.save(update_fields=["expires_at"])
    page = signed_in.get(reverse("web:link-list"))
    assert [link.state for link in page.context["page"]] == ["expired"]
    assert b"Expired" in page.content and reverse("web:link-edit", args=[expired.slug]).encode() in page.content
    toggled = signed_in.post(reverse("web:link-toggle", args=[expired.slug]), {"next": "list"})
    assert toggled["Location"] == reverse("web:link-list")


def test_error_pages_have_the_navigation(signed_in, client):
    missing = signed_in.get("/links/no-such-link-here/")
    assert missing.status_code == 404 and b'id="error-404"' in missing.content
    assert b'class="nav-wide"' in missing.content and b"Skip to the content" in missing.content
    api = signed_in.get("/api/v1/nothing-here")
    assert api.status_code == 404 and api["Content-Type"].startswith("application/json")


def test_each_error_of_a_field_is_on_a_line_of_its_own_with_described_ids(signed_in):
    page = signed_in.post(reverse("web:link-create"), {"url": "ftp://x", "slug": "a b", "redirect_status": "302"})
    html = page.content.decode()
    assert html.count('class="error field-error"') >= 2  # each its own line (app.css), under the field's error id
    for described in re.findall(r'aria-describedby="([^"]+)"', html):
        for name in described.split():
            assert f'id="{name}"' in html, name

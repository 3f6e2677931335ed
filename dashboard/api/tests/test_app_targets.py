"""A link's app targets (ios_url, android_url) through the API and a CSV
round trip: normalised as targets are, refused when not a web address or
when a blocklist has them, cleared with an empty string, published."""

import csv
import io
import json

import pytest

from links.models import Link
from links.publishing import link_payload
from testing.factories import fresh

pytestmark = pytest.mark.django_db

IOS, ANDROID = "https://apps.apple.com/app/id1", "https://play.google.com/store/apps/details?id=com.example.app"


def test_set_read_changed_and_cleared_through_the_api(api):
    slug = fresh("ap")
    made = api.post(
        "/api/v1/links",
        {
            "url": "https://example.com/",
            "slug": slug,
            "ios_url": IOS,
            "android_url": "HTTPS://Play.Google.com/store/apps/details?id=com.example.app",
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    assert (made.json()["ios_url"], made.json()["android_url"]) == (IOS, ANDROID)  # its host lower-cased
    published = json.loads(link_payload(Link.objects.get(slug=slug)))
    assert (published["ios_url"], published["android_url"]) == (IOS, ANDROID)
    refused = api.patch(f"/api/v1/links/{slug}", {"ios_url": "itms-apps://apps.apple.com/app/id1"}, format="json")
    assert refused.status_code == 400 and "ios_url" in refused.json()
    cleared = api.patch(f"/api/v1/links/{slug}", {"ios_url": ""}, format="json")
    assert cleared.status_code == 200 and cleared.json()["ios_url"] == ""
    assert json.loads(link_payload(Link.objects.get(slug=slug)))["ios_url"] is None


def test_a_csv_export_carries_them_and_an_import_reads_them_back(api):
    from clicks.selectors import with_click_totals
    from links.imports import domains_by_host, export_lines, row_arguments

    slug = fresh("ac")
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, "ios_url": IOS}, format="json")
    text = "".join(export_lines(with_click_totals(Link.objects.filter(slug=slug)).select_related("domain")))
    (row,) = csv.DictReader(io.StringIO(text))
    assert (row["ios_url"], row["android_url"]) == (IOS, "")
    fields, errors = row_arguments(row, domains_by_host())
    assert errors == {} and (fields.ios_url, fields.android_url) == (IOS, "")


def test_a_listed_app_target_is_refused_as_a_listed_destination_is(api):
    from screening import screen
    from screening.services import store_bans

    host = f"app-ban-{fresh()}.example"
    store_bans([host])
    try:
        answer = api.post(
            "/api/v1/links", {"url": "https://example.com/", "android_url": f"https://{host}/x"}, format="json"
        )
        assert answer.status_code == 400 and "staff bans" in json.dumps(answer.json()["android_url"])
    finally:
        store_bans([])
        screen.forget()

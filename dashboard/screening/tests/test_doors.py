"""Destinations screened at every door (screening/, links.validation): lists
read by `manage.py screen_lists` from files, then a listed destination (its
domain, a subdomain of it, or the exact URL of a URL list) refused with the
list's name by /api/v1 (one and bulk), the dashboard's form and its CSV
import, Shlink's and YOURLS' APIs, and a redirect rule's target; an
allowlist winning; a list that cannot be read kept as it was; a list no
longer configured gone."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from api.tests.shlink import shlink_client
from links.models import Link
from screening import screen
from screening.models import ScreenList
from testing.factories import fresh

pytestmark = pytest.mark.django_db

PHISH = "phish-{}.example"


@pytest.fixture
def lists(tmp_path, settings):
    """Three lists in three formats, and an allowlist; read as the refresher reads them."""
    phish = PHISH.format(fresh())
    hosts = tmp_path / "hosts"
    hosts.write_text(f"# a hosts file\n127.0.0.1 localhost\n0.0.0.0 {phish}\n")
    adguard = tmp_path / "adguard.txt"
    adguard.write_text("! AdGuard\n||track.example^$third-party\n||fine.track.example^\n")
    urlhaus = tmp_path / "urlhaus.csv"
    urlhaus.write_text(
        '# id,dateadded,url,url_status\n"1","2026-11-28 10:00:00","http://files.example/mal.exe","online"\n'
    )
    allow = tmp_path / "allow.txt"
    allow.write_text("fine.track.example\n")
    settings.SCREEN_LISTS = [f"hosts={hosts}", str(adguard), f"URLhaus={urlhaus}"]
    settings.SCREEN_ALLOWLIST = [str(allow)]
    call_command("screen_lists", "--once")
    screen.forget()
    yield {"phish": phish, "dir": tmp_path}
    screen.forget()


def test_every_list_is_read_and_kept_as_hashes(lists):
    rows = {row.name: row for row in ScreenList.objects.all()}
    assert set(rows) == {"hosts", "adguard.txt", "URLhaus", "allow.txt"}
    assert (rows["hosts"].entries, rows["adguard.txt"].entries, rows["URLhaus"].entries) == (1, 2, 1)
    assert rows["allow.txt"].allow and not rows["hosts"].allow and all(not row.error for row in rows.values())
    assert len(bytes(rows["adguard.txt"].domains)) == 16  # two 8-byte hashes


def test_the_api_refuses_a_listed_domain_its_subdomains_and_a_listed_url_naming_the_list(api, lists):
    for url, named in [
        (f"https://{lists['phish']}/login", f"{lists['phish']} is on the blocklist hosts"),
        (f"https://www.{lists['phish']}/x", f"{lists['phish']} is on the blocklist hosts"),
        ("https://cdn.track.example/", "track.example is on the blocklist adguard.txt"),
        ("http://FILES.example:80/mal.exe", "http://files.example/mal.exe is on the blocklist URLhaus"),
    ]:
        response = api.post("/api/v1/links", {"url": url}, format="json")
        assert response.status_code == 400, url
        assert response.json()["url"] == [f"{named}: links to it are not allowed here."]
    # Another page of the URL list's host, and the allowlisted subdomain, are not listed.
    assert api.post("/api/v1/links", {"url": "http://files.example/readme"}, format="json").status_code == 201
    assert api.post("/api/v1/links", {"url": "https://fine.track.example/"}, format="json").status_code == 201


def test_bulk_refuses_the_listed_items_and_makes_the_others(api, lists):
    good = fresh()
    response = api.post(
        "/api/v1/links/bulk",
        {"links": [{"url": f"https://{lists['phish']}/"}, {"url": "https://example.com/ok", "slug": good}]},
        format="json",
    )
    results = response.json()["results"]
    assert [r["status"] for r in results] == [400, 201] and "blocklist hosts" in results[0]["errors"]["url"][0]
    assert list(Link.objects.values_list("slug", flat=True)) == [good]


def test_a_redirect_rules_target_is_screened_too(api, lists):
    body = {
        "url": "https://example.com/",
        "rules": [{"url": f"https://{lists['phish']}/app", "conditions": [{"type": "device", "value": "ios"}]}],
    }
    response = api.post("/api/v1/links", body, format="json")
    assert response.status_code == 400 and "blocklist hosts" in json.dumps(response.json())


def test_the_dashboards_form_and_csv_import_report_listed_rows(signed_in, user, lists):
    page = signed_in.post(reverse("web:link-create"), {"url": f"https://{lists['phish']}/", "redirect_status": 302})
    assert page.status_code == 200 and b"is on the blocklist hosts" in page.content
    csv = f"url,slug\nhttps://{lists['phish']}/a,{fresh()}\nhttps://example.com/b,{fresh()}\n"
    answer = signed_in.post(
        reverse("web:link-import"), {"file": SimpleUploadedFile("links.csv", csv.encode(), "text/csv")}
    )
    report = signed_in.get(answer["Location"])
    errors = {row["line"]: row["errors"] for row in report.context["error_rows"]}
    assert list(errors) == [2] and "is on the blocklist hosts" in errors[2]["url"][0]
    assert report.context["valid"] == 1


def test_shlinks_and_yourls_apis_refuse_them_in_their_own_shapes(user, lists, client):
    from tokens.services import token_create

    shlink = shlink_client(user)
    response = shlink.post("/rest/v3/short-urls", {"longUrl": f"https://{lists['phish']}/"}, format="json")
    assert response.status_code == 400 and "blocklist hosts" in response.json()["detail"]

    _, raw = token_create(user=user, name="yourls", scope="write")
    answer = client.get(
        "/yourls-api.php",
        {"action": "shorturl", "signature": raw, "format": "json", "url": f"https://{lists['phish']}/"},
    )
    body = json.loads(answer.content)
    assert body["status"] == "fail" and "blocklist hosts" in body["message"]
    assert not Link.objects.exists()


def test_a_list_that_cannot_be_read_keeps_what_it_held_and_a_list_dropped_goes(api, lists, settings):
    (lists["dir"] / "hosts").unlink()
    call_command("screen_lists", "--once")
    screen.forget()
    hosts = ScreenList.objects.get(name="hosts")
    assert hosts.entries == 1 and "No such file" in hosts.error
    assert api.post("/api/v1/links", {"url": f"https://{lists['phish']}/"}, format="json").status_code == 400

    settings.SCREEN_LISTS = [item for item in settings.SCREEN_LISTS if not item.startswith("hosts=")]
    call_command("screen_lists", "--once")
    screen.forget()
    assert not ScreenList.objects.filter(name="hosts").exists()
    assert api.post("/api/v1/links", {"url": f"https://{lists['phish']}/"}, format="json").status_code == 201


def test_with_no_list_configured_nothing_is_listed_until_the_staff_ban_a_domain(settings):
    from screening.services import store_bans

    settings.SCREEN_LISTS = []
    screen.forget()
    assert not screen.current()
    assert screen.listing_of("phish.example", "https://phish.example/") is None
    store_bans(["phish.example"])
    listing = screen.listing_of("login.phish.example", "https://login.phish.example/")
    assert listing == screen.Listing("staff bans", "phish.example")
    call_command("screen_lists", "--once")  # a refresh of no lists keeps the bans
    screen.forget()
    assert screen.listing_of("phish.example", "https://phish.example/") is not None


def test_an_importer_reports_a_listed_row_and_imports_the_others(user, lists, tmp_path):
    from importers.tests.helpers import import_links
    from teams.services import team_create

    team = team_create(actor=user, name=fresh("team-"))
    listed, kept = fresh("listed-"), fresh("kept-")
    path = tmp_path / "links.csv"
    path.write_text(f"url,slug\nhttps://{lists['phish']}/a,{listed}\nhttps://example.com/b,{kept}\n")
    out = import_links("csv", str(path), user=user.username, team=str(team.pk))
    assert "1 created" in out and "blocklist hosts" in out, out
    assert list(Link.objects.values_list("slug", flat=True)) == [kept]

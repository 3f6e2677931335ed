"""Fallbacks through the API and a CSV round trip: a link's expired_url and
a domain's expired redirect, normalised as targets are, refused when not a
web address, audited, cleared with an empty string, published."""

import csv
import io
import json
import uuid

import orjson
import pytest
from django.core.exceptions import ValidationError

from links.models import Domain, Link
from links.publishing import link_payload
from slingshot.contract import DOMAINS_KEY
from slingshot.redis import get_redis
from teams.models import AuditEntry
from testing.factories import fresh

pytestmark = pytest.mark.django_db(transaction=True)

OVER = "https://example.com/Sale-Over"


def test_a_links_expired_url_is_set_read_changed_and_cleared_through_the_api(api):
    slug = fresh("fb")
    made = api.post(
        "/api/v1/links",
        {"url": "https://example.com/", "slug": slug, "max_visits": 5, "expired_url": "HTTPS://Example.COM/Sale-Over"},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["expired_url"] == OVER  # its scheme and host lower-cased, its path kept
    assert json.loads(link_payload(Link.objects.get(slug=slug)))["expired_url"] == OVER
    assert api.get(f"/api/v1/links/{slug}").json()["expired_url"] == OVER
    for bad in ("javascript:alert(1)", "not a url", 5):
        refused = api.patch(f"/api/v1/links/{slug}", {"expired_url": bad}, format="json")
        assert refused.status_code == 400 and "expired_url" in refused.json(), (bad, refused.content)
    assert Link.objects.get(slug=slug).expired_url == OVER
    changed = api.patch(f"/api/v1/links/{slug}", {"expired_url": "https://example.com/next"}, format="json")
    assert changed.status_code == 200 and changed.json()["expired_url"] == "https://example.com/next"
    entry = AuditEntry.objects.filter(action="link.changed").latest("id")
    assert entry.changes["expired_url"] == [OVER, "https://example.com/next"]
    cleared = api.patch(f"/api/v1/links/{slug}", {"expired_url": ""}, format="json")
    assert cleared.status_code == 200 and cleared.json()["expired_url"] == ""
    assert json.loads(link_payload(Link.objects.get(slug=slug)))["expired_url"] is None


def test_a_csv_export_carries_a_links_expired_url_and_an_import_reads_it_back(api):
    from clicks.selectors import with_click_totals
    from links.imports import domains_by_host, export_lines, row_arguments
    from links.services import link_validate

    slug = fresh("fc")
    api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, "expired_url": OVER}, format="json")
    text = "".join(export_lines(with_click_totals(Link.objects.filter(slug=slug)).select_related("domain")))
    (row,) = csv.DictReader(io.StringIO(text))
    assert row["expired_url"] == OVER
    fields, errors = row_arguments(row, domains_by_host())
    assert errors == {} and fields.expired_url == OVER
    fields, errors = row_arguments({**row, "slug": fresh(), "expired_url": "javascript:alert(1)"}, domains_by_host())
    with pytest.raises(ValidationError) as refused:
        link_validate(fields)
    assert "expired_url" in refused.value.message_dict


def test_a_domains_expired_redirect_is_set_and_cleared_by_staff_through_the_api(client_for, make_user, api):
    staff_api = client_for(make_user(is_staff=True))
    host = f"fb-{uuid.uuid4().hex[:6]}.example.com"
    made = staff_api.post(
        "/api/v1/domains", {"host": host, "expired_url": "HTTPS://Go.Example.com/over"}, format="json"
    )
    assert made.status_code == 201, made.content
    assert made.json()["expired_url"] == "https://go.example.com/over"
    assert orjson.loads(get_redis().hget(DOMAINS_KEY, host))["expired_url"] == "https://go.example.com/over"
    refused = staff_api.patch(f"/api/v1/domains/{host}", {"expired_url": "ftp://example.com/"}, format="json")
    assert refused.status_code == 400 and "expired_url" in refused.json()
    assert api.patch(f"/api/v1/domains/{host}", {"expired_url": ""}, format="json").status_code == 403
    assert Domain.objects.get(host=host).expired_url == "https://go.example.com/over"
    cleared = staff_api.patch(f"/api/v1/domains/{host}", {"expired_url": ""}, format="json")
    assert cleared.status_code == 200 and cleared.json()["expired_url"] == ""
    assert orjson.loads(get_redis().hget(DOMAINS_KEY, host))["expired_url"] is None

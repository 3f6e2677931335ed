"""Redirect rules and A/B splits through the API: kept normalised, published
for the edge, and refused with the path of the bad part."""

import csv
import io
import json

import orjson
import pytest

from links.models import Link
from slingshot.contract import link_key
from slingshot.redis import get_redis
from testing.factories import fresh

pytestmark = pytest.mark.django_db(transaction=True)

RULES = [
    {"url": "HTTPS://iOS.example/app", "conditions": [{"type": "device", "value": "ios"}]},
    {
        "url": "https://de.example/",
        "conditions": [{"type": "language", "value": "de"}, {"type": "country", "value": "at"}],
    },
    {"url": "https://q.example/", "conditions": [{"type": "query", "key": "ref"}]},
]
SPLIT = [{"url": "https://a.example/", "weight": 80}, {"url": "https://b.example/", "weight": 20}]


def test_rules_and_split_round_trip_and_reach_redis(api):
    slug = fresh()
    response = api.post(
        "/api/v1/links", {"url": "https://example.com/", "slug": slug, "rules": RULES, "split": SPLIT}, format="json"
    )
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["rules"][0] == {"url": "https://ios.example/app", "conditions": [{"type": "device", "value": "ios"}]}
    assert created["rules"][1]["conditions"][1] == {"type": "country", "value": "AT"}
    assert created["rules"][2]["conditions"] == [{"type": "query", "key": "ref", "value": None}]
    assert created["split"] == SPLIT
    assert Link.objects.get(slug=slug).rules == created["rules"]
    published = orjson.loads(get_redis().get(link_key(slug)))
    assert published["rules"] == created["rules"] and published["split"] == SPLIT

    cleared = api.patch(f"/api/v1/links/{slug}", {"rules": [], "split": []}, format="json")
    assert cleared.status_code == 200, cleared.content
    published = orjson.loads(get_redis().get(link_key(slug)))
    assert published["rules"] == [] and published["split"] == []


def test_address_browser_and_date_rules_are_kept_normalised_and_published(api):
    slug = fresh()
    rules = [
        {
            "url": "https://office.example/",
            "conditions": [{"type": "ip", "value": "192.168.1.*"}, {"type": "browser", "value": "Firefox"}],
        },
        {
            "url": "https://window.example/",
            "conditions": [
                {"type": "after", "value": "2030-01-01T00:00:00+01:00"},
                {"type": "before", "value": "2030-02-01"},
                {"type": "ip", "value": "2001:DB8::/32"},
                {"type": "device", "value": "chromeos"},
            ],
        },
    ]
    response = api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, "rules": rules}, format="json")
    assert response.status_code == 201, response.content
    kept = response.json()["rules"]
    assert kept[0]["conditions"] == [{"type": "ip", "value": "192.168.1.*"}, {"type": "browser", "value": "firefox"}]
    assert kept[1]["conditions"] == [
        {"type": "after", "value": "2029-12-31T23:00:00Z"},
        {"type": "before", "value": "2030-02-01T00:00:00Z"},
        {"type": "ip", "value": "2001:db8::/32"},
        {"type": "device", "value": "chromeos"},
    ]
    assert orjson.loads(get_redis().get(link_key(slug)))["rules"] == kept


def test_address_browser_and_date_rules_make_a_csv_round_trip(api):
    from django.core.exceptions import ValidationError

    from clicks.selectors import with_click_totals
    from links.imports import domains_by_host, export_lines, row_arguments
    from links.services import link_validate

    slug = fresh()
    rules = [
        {
            "url": "https://office.example/",
            "conditions": [
                {"type": "ip", "value": "10.0.0.0/8"},
                {"type": "browser", "value": "android_browser"},
                {"type": "after", "value": "2030-01-01T00:00:00Z"},
                {"type": "before", "value": "2030-02-01T00:00:00Z"},
                {"type": "device", "value": "chromeos"},
            ],
        }
    ]
    made = api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, "rules": rules}, format="json")
    assert made.status_code == 201, made.content
    text = "".join(export_lines(with_click_totals(Link.objects.filter(slug=slug)).select_related("domain")))
    (row,) = csv.DictReader(io.StringIO(text))
    assert json.loads(row["rules"]) == rules
    fields, errors = row_arguments(row, domains_by_host())
    assert errors == {} and fields.rules == rules
    bad = json.dumps([{"url": "https://x.example/", "conditions": [{"type": "browser", "value": "netscape"}]}])
    fields, errors = row_arguments({**row, "slug": fresh(), "rules": bad}, domains_by_host())
    with pytest.raises(ValidationError) as refused:
        link_validate(fields)
    assert "rules" in refused.value.message_dict


def test_a_link_without_rules_has_empty_lists(api):
    slug = fresh()
    created = api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug}, format="json").json()
    assert created["rules"] == [] and created["split"] == []


@pytest.mark.parametrize(
    "fields, reason",
    [
        ({"rules": {"url": "https://e.example/"}}, "rules: must be a list."),
        ({"rules": None}, "This field may not be null."),
        ({"rules": [{"url": "https://e.example/", "conditions": [{"type": "device", "value": "tv"}]}]}, "rules[0]"),
        ({"rules": [{"url": "ftp://e.example/", "conditions": [{"type": "device", "value": "ios"}]}]}, "rules[0].url"),
        ({"rules": [{"url": "https://e.example/", "conditions": [{"type": "country", "value": "XX"}]}]}, "XX"),
        ({"rules": [{"url": "https://e.example/", "conditions": [], "weight": 1}]}, "unknown field(s) weight"),
        (
            {"rules": [{"url": "https://e.example/", "conditions": [{"type": "ip", "value": "192.0.2.0/33"}]}]},
            "rules[0].conditions[0].value: '192.0.2.0/33' is not an IP address",
        ),
        (
            {"rules": [{"url": "https://e.example/", "conditions": [{"type": "after", "value": "2030-13-01"}]}]},
            "rules[0].conditions[0].value: '2030-13-01' is not an ISO 8601 date",
        ),
        (
            {"rules": [{"url": "https://e.example/", "conditions": [{"type": "browser", "value": "lynx"}]}]},
            "rules[0].conditions[0].value: 'lynx' is not a browser",
        ),
        ({"split": [{"url": "https://a.example/", "weight": 100}]}, "split: must hold 2 to 10"),
        ({"split": [*SPLIT[:1], {"url": "https://b.example/", "weight": "5"}]}, "split[1].weight"),
    ],
)
def test_invalid_rules_are_a_400_with_the_reason(api, fields, reason):
    slug = fresh()
    response = api.post("/api/v1/links", {"url": "https://example.com/", "slug": slug, **fields}, format="json")
    assert response.status_code == 400
    field = next(iter(fields))
    assert any(reason in message for message in response.json()[field]), response.json()
    assert not Link.objects.filter(slug=slug).exists()

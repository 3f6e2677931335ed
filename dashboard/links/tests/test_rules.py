"""Redirect rules and A/B splits (links.rules): pure logic over settings."""

import pytest
from django.core.exceptions import ValidationError

from links.rules import Served, served_by, validate_rules, validate_split

# Targets are checked against the domains' hosts (links.validation.normalise_target), which live in the database.
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def edge_at(settings):
    settings.EDGE_BASE_URL = "https://go.example.com"
    settings.LINK_DOMAIN_BLOCKLIST = ["blocked.example"]
    settings.LINK_URL_MAX_LENGTH = 2048


def test_rules_are_kept_normalised():
    rules = validate_rules(
        [
            {
                "url": "HTTPS://Apps.Apple.example/app",
                "conditions": [{"type": "device", "value": "iOS"}, {"type": "language", "value": "EN-gb"}],
            },
            {"url": "https://de.example/", "conditions": [{"type": "country", "value": "de"}]},
            {"url": "https://q.example/", "conditions": [{"type": "query", "key": "ref", "value": "mail"}]},
            {"url": "https://p.example/", "conditions": [{"type": "query", "key": "beta"}]},
        ]
    )
    assert rules == [
        {
            "url": "https://apps.apple.example/app",
            "conditions": [{"type": "device", "value": "ios"}, {"type": "language", "value": "en-GB"}],
        },
        {"url": "https://de.example/", "conditions": [{"type": "country", "value": "DE"}]},
        {"url": "https://q.example/", "conditions": [{"type": "query", "key": "ref", "value": "mail"}]},
        {"url": "https://p.example/", "conditions": [{"type": "query", "key": "beta", "value": None}]},
    ]
    assert validate_rules([]) == []


def _one(condition):
    return [{"url": "https://e.example/", "conditions": [condition]}]


@pytest.mark.parametrize(
    "condition, kept",
    [
        ({"type": "ip", "value": "192.0.2.7"}, "192.0.2.7"),
        ({"type": "ip", "value": "192.0.2.77/24"}, "192.0.2.0/24"),
        ({"type": "ip", "value": "0.0.0.0/0"}, "0.0.0.0/0"),
        ({"type": "ip", "value": "2001:DB8:0:0::1"}, "2001:db8::1"),
        ({"type": "ip", "value": "2001:db8::1/32"}, "2001:db8::/32"),
        ({"type": "ip", "value": "::ffff:192.0.2.7"}, "192.0.2.7"),
        ({"type": "ip", "value": "192.168.1.*"}, "192.168.1.*"),
        ({"type": "ip", "value": "10.*.*.1"}, "10.*.*.1"),
        ({"type": "browser", "value": "Android_Browser"}, "android_browser"),
        ({"type": "device", "value": "ChromeOS"}, "chromeos"),
        ({"type": "before", "value": "2030-01-31T23:59:59Z"}, "2030-01-31T23:59:59Z"),
        ({"type": "before", "value": "2030-02-01T01:00:00+02:00"}, "2030-01-31T23:00:00Z"),
        ({"type": "after", "value": "2030-01-31"}, "2030-01-31T00:00:00Z"),
        ({"type": "after", "value": "2030-01-31T10:00"}, "2030-01-31T10:00:00Z"),
        ({"type": "after", "value": "2030-01-31T10:00:00.999Z"}, "2030-01-31T10:00:00Z"),
        ({"type": "after", "value": "0999-01-01T00:00:00Z"}, "0999-01-01T00:00:00Z"),
    ],
)
def test_address_browser_and_date_conditions_are_kept_normalised(condition, kept):
    assert validate_rules(_one(condition))[0]["conditions"] == [{"type": condition["type"], "value": kept}]


def test_what_served_a_visit_says_the_new_conditions_plainly():
    rules = validate_rules(
        [
            {"url": "https://a.example/", "conditions": [{"type": "ip", "value": "10.0.0.0/8"}]},
            {
                "url": "https://b.example/",
                "conditions": [{"type": "after", "value": "2030-01-01"}, {"type": "browser", "value": "opera"}],
            },
        ]
    )
    assert [served.what for served in served_by(rules=rules, split=[], url="https://d.example/")][:2] == [
        "Rule 1: address matches 10.0.0.0/8",
        "Rule 2: date after 2030-01-01T00:00:00Z and browser is opera",
    ]


@pytest.mark.parametrize(
    "value, path",
    [
        ("not a list", "rules:"),
        ([{"url": "https://e.example/", "conditions": []}] * 21, "rules:"),
        (["x"], "rules[0]:"),
        ([{"url": "https://e.example/"}], "rules[0]: missing field(s) conditions"),
        ([{"url": "https://e.example/", "conditions": [], "extra": 1}], "rules[0]: unknown field(s) extra"),
        ([{"url": "https://e.example/", "conditions": []}], "rules[0].conditions:"),
        ([{"url": "ftp://e.example/", "conditions": [{"type": "device", "value": "ios"}]}], "rules[0].url:"),
        ([{"url": "https://blocked.example/", "conditions": [{"type": "device", "value": "ios"}]}], "rules[0].url:"),
        (_one({"type": "weekday", "value": "mon"}), "rules[0].conditions[0].type:"),
        (_one({"type": "device", "value": "tv"}), "rules[0].conditions[0].value:"),
        (_one({"type": "device", "value": 1}), "rules[0].conditions[0].value:"),
        (_one({"type": "device"}), "rules[0].conditions[0]: missing"),
        (_one({"type": "device", "value": "ios", "key": "k"}), "rules[0].conditions[0].key:"),
        (_one({"type": "language", "value": "english"}), "rules[0].conditions[0].value:"),
        (_one({"type": "language", "value": "zz"}), "rules[0].conditions[0].value:"),
        (_one({"type": "country", "value": "XX"}), "rules[0].conditions[0].value:"),
        (_one({"type": "country", "value": "DEU"}), "rules[0].conditions[0].value:"),
        (_one({"type": "query", "value": "v"}), "rules[0].conditions[0]: missing field(s) key"),
        (_one({"type": "query", "key": "a b"}), "rules[0].conditions[0].key:"),
        (_one({"type": "query", "key": "k", "value": "x" * 201}), "rules[0].conditions[0].value:"),
        (_one({"type": "query", "key": "k", "value": 3}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": "192.0.2.0/33"}), "rules[0].conditions[0].value: '192.0.2.0/33' is not an IP"),
        (_one({"type": "ip", "value": "2001:db8::/129"}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": "192.0.2"}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": "10.0.0.01"}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": "10.*.0"}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": "10.*.0.0/16"}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": "10.0*.0.1"}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": "fe80::*"}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": "fe80::1%eth0"}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": "::ffff:0:0/96"}), "rules[0].conditions[0].value: '::ffff:0:0/96' is an IPv4"),
        (_one({"type": "ip", "value": "1" * 60}), "rules[0].conditions[0].value:"),
        (_one({"type": "ip", "value": 3232235777}), "rules[0].conditions[0].value:"),
        (_one({"type": "browser", "value": "netscape"}), "rules[0].conditions[0].value: 'netscape' is not a browser"),
        (_one({"type": "browser", "value": None}), "rules[0].conditions[0].value:"),
        (_one({"type": "before", "value": "2030-02-30"}), "rules[0].conditions[0].value: '2030-02-30' is not an ISO"),
        (_one({"type": "before", "value": "tomorrow"}), "rules[0].conditions[0].value:"),
        (_one({"type": "after", "value": ""}), "rules[0].conditions[0].value:"),
        (_one({"type": "after", "value": 1893456000}), "rules[0].conditions[0].value:"),
        (_one({"type": "after", "value": "9999-12-31T23:00:00-05:00"}), "rules[0].conditions[0].value:"),
        (_one({"type": "after", "value": "2030-01-01", "key": "k"}), "rules[0].conditions[0].key:"),
    ],
)
def test_bad_rules_are_refused_naming_the_part(value, path):
    with pytest.raises(ValidationError) as caught:
        validate_rules(value)
    assert caught.value.messages[0].startswith(path), caught.value.messages


def test_a_split_keeps_whole_weights():
    split = [{"url": "https://A.example/", "weight": 70}, {"url": "https://b.example/", "weight": 30}]
    assert validate_split(split) == [
        {"url": "https://a.example/", "weight": 70},
        {"url": "https://b.example/", "weight": 30},
    ]
    assert validate_split([]) == []
    rules = validate_rules(_one({"type": "country", "value": "nl"}))
    assert served_by(rules=rules, split=validate_split(split), url="https://d.example/") == [
        Served("1", "Rule 1: country is NL", "https://e.example/"),
        Served("ab1", "A/B 1: 70% of visitors", "https://a.example/"),
        Served("ab2", "A/B 2: 30% of visitors", "https://b.example/"),
    ]
    query = validate_rules(_one({"type": "query", "key": "k"}))
    assert served_by(rules=query, split=[], url="https://d.example/") == [
        Served("1", "Rule 1: query has k", "https://e.example/"),
        Served("", "No rule matched", "https://d.example/"),
    ]


@pytest.mark.parametrize(
    "value, path",
    [
        ({"url": "https://a.example/"}, "split:"),
        ([{"url": "https://a.example/", "weight": 1}], "split:"),
        ([{"url": "https://a.example/", "weight": 1}] * 11, "split:"),
        ([{"url": "https://a.example/", "weight": 0}, {"url": "https://b.example/", "weight": 1}], "split[0].weight:"),
        (
            [{"url": "https://a.example/", "weight": 101}, {"url": "https://b.example/", "weight": 1}],
            "split[0].weight:",
        ),
        (
            [{"url": "https://a.example/", "weight": 1.5}, {"url": "https://b.example/", "weight": 1}],
            "split[0].weight:",
        ),
        (
            [{"url": "https://a.example/", "weight": True}, {"url": "https://b.example/", "weight": 1}],
            "split[0].weight:",
        ),
        ([{"url": "https://a.example/", "weight": 1}, {"url": "javascript:x", "weight": 1}], "split[1].url:"),
        ([{"url": "https://a.example/", "weight": 1}, {"url": "https://b.example/"}], "split[1]: missing"),
    ],
)
def test_bad_splits_are_refused_naming_the_part(value, path):
    with pytest.raises(ValidationError) as caught:
        validate_split(value)
    assert caught.value.messages[0].startswith(path), caught.value.messages


@pytest.mark.parametrize("char", ["\ud800", "\udfff", "\x00", "\u3164", "\u115f", "\ufe0f"])
def test_what_cannot_be_kept_or_seen_is_refused_naming_the_part_and_never_quoted_raw(char):
    host = f"https://exa{char}mple.com/"
    cases = [
        (validate_rules, [{"url": host, "conditions": [{"type": "device", "value": "ios"}]}], "rules[0].url:"),
        (validate_split, [{"url": "https://a.example/", "weight": 1}, {"url": host, "weight": 1}], "split[1].url:"),
        (validate_rules, [{"url": "https://e.example/", "conditions": [], f"x{char}": 1}], "rules[0]: unknown"),
        (validate_rules, _one({"type": "query", "key": f"k{char}"}), "rules[0].conditions[0].key:"),
        (validate_rules, _one({"type": "query", "key": "k", "value": f"v{char}"}), "rules[0].conditions[0].value:"),
        (validate_rules, _one({"type": "device", "value": f"ios{char}"}), "rules[0].conditions[0].value:"),
        (validate_rules, _one({"type": "language", "value": f"en{char}"}), "rules[0].conditions[0].value:"),
        (validate_rules, _one({"type": "country", "value": f"D{char}"}), "rules[0].conditions[0].value:"),
        (validate_rules, _one({"type": "ip", "value": f"10.0.0.1{char}"}), "rules[0].conditions[0].value:"),
        (validate_rules, _one({"type": "browser", "value": f"chrome{char}"}), "rules[0].conditions[0].value:"),
        (validate_rules, _one({"type": "before", "value": f"2030-01-01{char}"}), "rules[0].conditions[0].value:"),
    ]
    for check, value, path in cases:
        with pytest.raises(ValidationError) as caught:
            check(value)
        message = caught.value.messages[0]
        assert message.startswith(path), message
        assert char not in message and message.encode("utf-8"), message

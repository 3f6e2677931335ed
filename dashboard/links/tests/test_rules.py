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
    ]
    for check, value, path in cases:
        with pytest.raises(ValidationError) as caught:
            check(value)
        message = caught.value.messages[0]
        assert message.startswith(path), message
        assert char not in message and message.encode("utf-8"), message

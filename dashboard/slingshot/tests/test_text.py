"""Text that cannot be kept and characters that cannot be seen
(slingshot.text): pure logic."""

import unicodedata

import pytest
from django.core.exceptions import ValidationError

from slingshot.text import check_storable, describe, first_invisible, invisible, shown, unstorable, unstorable_in

# Default_Ignorable_Code_Point, from Unicode's DerivedCoreProperties.txt
# (16.0): the oracle `invisible` is held against, not a list it uses.
DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]


def test_every_assigned_default_ignorable_code_point_is_invisible():
    assigned = [
        chr(point)
        for first, last in DEFAULT_IGNORABLE
        for point in range(first, last + 1)
        if unicodedata.category(chr(point)) != "Cn"
    ]
    assert len(assigned) > 400
    assert [describe(char) for char in assigned if not invisible(char)] == []


@pytest.mark.parametrize("char", ["a", " ", "\x00", "ü", "ß", "ς", "한", "\u1161", "❤", "\u0301", "例", "\U0001f600"])
def test_what_shows_is_not_invisible(char):
    assert not invisible(char)


def test_the_first_invisible_character_is_found():
    assert first_invisible("exa\u3164mple\u115f.com") == "\u3164"
    assert first_invisible("\u2764\ufe0f") == "\ufe0f"
    assert first_invisible("Bücher.example") is None


@pytest.mark.parametrize(
    "value, found",
    [
        ("plain", None),
        ("Bücher \U0001f600", None),  # a character beyond U+FFFF is one code point in Python, not a pair
        ("a\x00b", "\x00"),
        ("a\ud800", "\ud800"),
        ("\udfff", "\udfff"),
        ("\udbff\udc00", "\udbff"),  # a pair JSON would join, left apart: two lone halves
    ],
)
def test_unstorable_finds_nul_and_lone_surrogates(value, found):
    assert unstorable(value) == found


def test_unstorable_in_walks_keys_values_and_lists():
    assert unstorable_in({"rules": [{"url": "https://e.example/", "conditions": [{"type": "x"}]}]}) is None
    assert unstorable_in({"rules": [{"url": "https://e.example/\ud800"}]}) == "\ud800"
    assert unstorable_in([{"k\x00": 1}]) == "\x00"
    assert unstorable_in(12) is None


def test_the_refusals_name_the_character_without_quoting_it():
    with pytest.raises(ValidationError) as surrogate:
        check_storable({"url": "https://e.example/\udc80"})
    assert surrogate.value.code == "surrogate_characters_not_allowed"
    assert "U+DC80" in surrogate.value.messages[0]
    assert surrogate.value.messages[0].encode("utf-8")
    with pytest.raises(ValidationError) as null:
        check_storable("a\x00")
    assert null.value.messages == ["Null characters are not allowed."]
    check_storable("Bücher \u3164")  # invisible, but text can hold it


def test_shown_escapes_only_what_cannot_be_kept_or_seen():
    assert shown("weight") == "weight"
    assert shown("Bücher.example") == "Bücher.example"
    assert shown("u\ud800") == "u\\ud800"
    assert shown("exa\u3164mple") == "exa\\u3164mple"
    assert shown("a\x00\u200bb") == "a\\x00\\u200bb"
    assert shown("u\ud800").encode("utf-8")


def test_describe_names_the_character():
    assert describe("\u3164") == "U+3164 (HANGUL FILLER)"
    assert describe("\ud800") == "U+D800"

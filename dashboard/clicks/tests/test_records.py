"""The click stream's record format (docs/contract.md): pure logic, no database."""

import pytest

from clicks.records import BadEntry, decode_entry, encode_entry

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"


def entry(clicks: bytes, version: bytes = b"3") -> dict:
    """An entry of these clicks; format 3 unless told, as the payloads below are written."""
    return {b"v": version, b"clicks": clicks}


def test_rows_number_the_clicks_from_the_first():
    clicks = [
        {
            "ts": 1763800000123,
            "slug": "abc",
            "link": 42,
            "ip": "203.0.113.9",
            "ua": CHROME,
            "ref": "https://r.example/?a=1",
            "rule": "ab2",
        },
        {"ts": 1763800000004, "slug": "nope", "link": None, "ip": "2001:db8::7", "ua": "", "ref": ""},
    ]
    fields = encode_entry("8f1c2a9b3d4e5f60", 0xFFFF_FFFF, clicks)
    assert fields["v"] == b"5"
    assert fields["clicks"].startswith(b"8f1c2a9b3d4e5f60\nffffffff\nabc\n42\nab2\n1763800000.123\n203.0.113.9\n")
    assert decode_entry({key.encode(): value for key, value in fields.items()}) == [
        (
            "8f1c2a9b3d4e5f6000000000ffffffff",
            1763800000123,
            "abc",
            "42",
            "203.0.113.9",
            CHROME,
            "https://r.example/?a=1",
            "ab2",
        ),
        ("8f1c2a9b3d4e5f600000000100000000", 1763800000004, "nope", "", "2001:db8::7", "", "", "unknown"),
    ]


def test_the_contract_example_reads_as_documented():
    payload = (
        b"8f1c2a9b3d4e5f60\n2a\nabc\n17\n2\n1763800000.123\n203.0.113.9\ncurl/8.0\nhttps://example.org/\n"
        b"nope\n\nunknown\n1763800000.131\n2001:db8::7\nMozilla/5.0 (X11; Linux x86_64)\n\n"
    )
    rows = decode_entry(entry(payload, b"5"))
    assert [row[0] for row in rows] == ["8f1c2a9b3d4e5f60000000000000002a", "8f1c2a9b3d4e5f60000000000000002b"]
    assert [row[3] for row in rows] == ["17", ""]
    assert [row[7] for row in rows] == ["2", "unknown"]
    assert rows[0][4:7] == ("203.0.113.9", "curl/8.0", "https://example.org/")


def test_format_3_entries_left_in_the_stream_by_an_older_edge_still_read():
    payload = (
        b"8f1c2a9b3d4e5f60\n2a\nabc\n17\n1763800000.123\n203.0.113.9\ncurl/8.0\nhttps://example.org/\n"
        b"nope\n\n1763800000.131\n2001:db8::7\nMozilla/5.0 (X11; Linux x86_64)\n\n"
    )
    rows = decode_entry(entry(payload, b"3"))
    assert rows == [
        (
            "8f1c2a9b3d4e5f60000000000000002a",
            1763800000123,
            "abc",
            "17",
            "203.0.113.9",
            "curl/8.0",
            "https://example.org/",
            "",
        ),
        (
            "8f1c2a9b3d4e5f60000000000000002b",
            1763800000131,
            "nope",
            "",
            "2001:db8::7",
            "Mozilla/5.0 (X11; Linux x86_64)",
            "",
            "unknown",  # an older edge recorded only unknown slugs, on no domain
        ),
    ]
    # The same clicks in format 4 are the same rows.
    four = payload.replace(b"\n17\n", b"\n17\n\n").replace(b"nope\n\n", b"nope\n\n\n")
    assert decode_entry(entry(four, b"4")) == rows


@pytest.mark.parametrize(
    "payload, reason",
    [
        (b"0000000000000000\n1\ns\n1\n3\n1.000\n::1\nua\nref\n", "[]"),
        (b"0000000000000000\n1\ns\n1\nab12\n1.000\n::1\nua\nref\n", "[]"),
        (b"0000000000000000\n1\ns\n1\n0\n1.000\n::1\nua\nref\n", "rule"),
        (b"0000000000000000\n1\ns\n1\nab\n1.000\n::1\nua\nref\n", "rule"),
        (b"0000000000000000\n1\ns\n1\n100\n1.000\n::1\nua\nref\n", "rule"),
        (b"0000000000000000\n1\ns\n1\n1.000\n::1\nua\nref\n", "7 lines a click"),
    ],
)
def test_the_rule_line_of_format_4(payload, reason):
    if reason == "[]":
        assert decode_entry(entry(payload, b"4"))[0][7] in ("3", "ab12")
    else:
        with pytest.raises(BadEntry, match=reason):
            decode_entry(entry(payload, b"4"))


@pytest.mark.parametrize(
    "third, reason",
    [
        (b"unknown", None),
        (b"disabled go.example.com", None),
        (b"scheduled xn--bcher-kva.example", None),
        (b"expired " + b"h" * 253, None),
        (b"limit", None),
        (b"password go.example.com", None),
        (b"", "orphan visit"),
        (b"limited", "orphan visit"),
        (b"gone", "orphan visit"),
        (b"1", "orphan visit"),
        (b"unknown ", "orphan visit"),
        (b"unknown a b", "orphan visit"),
        (b"unknown a\\b", "orphan visit"),
        (b"expired " + b"h" * 254, "orphan visit"),
    ],
)
def test_an_orphan_visit_of_format_5_has_a_kind_and_maybe_a_host(third, reason):
    payload = b"0000000000000000\n1\ns\n\n" + third + b"\n1.000\n::1\nua\nref\ns\n1\nab1\n1.000\n::1\nua\nref\n"
    if reason is None:
        assert [row[7] for row in decode_entry(entry(payload, b"5"))] == [third.decode(), "ab1"]
    else:
        with pytest.raises(BadEntry, match=reason):
            decode_entry(entry(payload, b"5"))
    # A link's click of format 5 has a rule, never a kind.
    with pytest.raises(BadEntry, match="rule"):
        decode_entry(entry(b"0000000000000000\n1\ns\n1\nunknown\n1.000\n::1\nua\nref\n", b"5"))


def test_values_are_taken_as_they_came_and_bytes_that_are_not_utf8_replaced():
    agent = b'say "hi" \\ \t","ref":"spoof caf\xe9'
    payload = b"0000000000000000\n1\ns\n1\n1.000\n::1\n" + agent + b"\nhttps://r.example/\xff\n"
    (row,) = decode_entry(entry(payload))
    assert row[5] == 'say "hi" \\ \t","ref":"spoof caf\ufffd'
    assert row[6] == "https://r.example/\ufffd"


@pytest.mark.parametrize(
    "payload, reason",
    [
        (b"0000000000000000\n1\ns\n1\n1.000\n::1\nua\nref", "6 lines a click"),
        (b"0000000000000000\n1\ns\n1\n1.000\n::1\nua\n", "6 lines a click"),
        (b"000000000000000\n1\ns\n1\n1.000\n::1\nua\nref\n", "prefix"),
        (b"000000000000000G\n1\ns\n1\n1.000\n::1\nua\nref\n", "prefix"),
        (b"0000000000000000\n-1\ns\n1\n1.000\n::1\nua\nref\n", "first number"),
        (b"0000000000000000\nffffffffffffffff\ns\n1\n1.000\n::1\nua\nref\ns\n1\n1.000\n::1\nua\nref\n", "past 16"),
        (b"0000000000000000\n1\n\n1\n1.000\n::1\nua\nref\n", "slug"),
        (b"0000000000000000\n1\n" + b"s" * 65 + b"\n1\n1.000\n::1\nua\nref\n", "slug"),
        (b"0000000000000000\n1\ns\nyes\n1.000\n::1\nua\nref\n", "link id"),
        (b"0000000000000000\n1\ns\n0\n1.000\n::1\nua\nref\n", "link id"),
        (b"0000000000000000\n1\ns\n-3\n1.000\n::1\nua\nref\n", "link id"),
        (b"0000000000000000\n1\ns\n12345678901234567\n1.000\n::1\nua\nref\n", "link id"),
        (b"0000000000000000\n1\ns\n1\n1.5\n::1\nua\nref\n", "Unix seconds"),
        (b"0000000000000000\n1\ns\n1\n 1.000\n::1\nua\nref\n", "Unix seconds"),
        (b"0000000000000000\n1\ns\n1\n1000\n::1\nua\nref\n", "Unix seconds"),
        (b"0000000000000000\n1\ns\n1\n1234567890123.000\n::1\nua\nref\n", "Unix seconds"),
        (b"0000000000000000\n1\ns\n1\n1.0000\n::1\nua\nref\n", "Unix seconds"),
        (b"ABABABABABABABAB\n1\ns\n1\n1.000\n::1\nua\nref\n", "prefix"),
        (b"0000000000000000\n" + b"1" * 17 + b"\ns\n1\n1.000\n::1\nua\nref\n", "first number"),
        (b"0000000000000000\n\ns\n1\n1.000\n::1\nua\nref\n", "first number"),
        (b"", "6 lines a click"),
        (b"\n", "6 lines a click"),
    ],
)
def test_entries_that_break_the_contract_are_refused(payload, reason):
    with pytest.raises(BadEntry, match=reason):
        decode_entry(entry(payload))


def test_a_slug_is_counted_in_characters_and_the_last_click_number_may_be_the_largest():
    def payload(slug: str, first: bytes = b"1") -> bytes:
        return b"0000000000000000\n" + first + b"\n" + slug.encode() + b"\n1\n1.000\n::1\nua\nref\n"

    assert decode_entry(entry(payload("é" * 64)))[0][2] == "é" * 64
    with pytest.raises(BadEntry, match="slug"):
        decode_entry(entry(payload("é" * 65)))
    (row,) = decode_entry(entry(payload("s", b"ffffffffffffffff")))
    assert row[0] == "0000000000000000ffffffffffffffff"
    assert decode_entry(entry(b"0000000000000000\n1\n")) == []


def test_unknown_versions_and_entries_without_clicks_are_refused():
    good = b"0000000000000000\n1\ns\n1\n1.000\n::1\nua\nref\n"
    for version in (b"1", b"2", b"6", None):
        with pytest.raises(BadEntry, match="record version"):
            decode_entry({b"v": version, b"clicks": good} if version else {b"clicks": good})
    with pytest.raises(BadEntry, match="no clicks"):
        decode_entry({b"v": b"3"})

"""The click stream's record formats (docs/contract.md): pure logic, no database."""
import orjson
import pytest

from clicks.clickstream import BadEntry, decode_entry, encode_lines

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"


def entry(version: bytes, clicks: bytes) -> dict:
    return {b"v": version, b"clicks": clicks}


def test_format_2_rows_number_the_clicks_from_the_first():
    clicks = [
        {"ts": 1763800000123, "slug": "abc", "ip": "203.0.113.9", "ua": CHROME, "ref": "https://r.example/?a=1"},
        {"ts": 1763800000004, "slug": "nope", "ip": "2001:db8::7", "ua": "", "ref": "", "orphan": True},
    ]
    payload = encode_lines("8f1c2a9b3d4e5f60", 0xFFFF_FFFF, clicks)
    assert payload.startswith(b"8f1c2a9b3d4e5f60\nffffffff\nabc\n0\n1763800000.123\n203.0.113.9\n")
    assert decode_entry(entry(b"2", payload)) == [
        ("8f1c2a9b3d4e5f6000000000ffffffff", 1763800000123, "abc", "203.0.113.9", CHROME,
         "https://r.example/?a=1", False),
        ("8f1c2a9b3d4e5f600000000100000000", 1763800000004, "nope", "2001:db8::7", "", "", True),
    ]


def test_the_contract_example_reads_as_documented():
    payload = (b"8f1c2a9b3d4e5f60\n2a\nabc\n0\n1763800000.123\n203.0.113.9\ncurl/8.0\nhttps://example.org/\n"
               b"nope\n1\n1763800000.131\n2001:db8::7\nMozilla/5.0 (X11; Linux x86_64)\n\n")
    rows = decode_entry(entry(b"2", payload))
    assert [row[0] for row in rows] == ["8f1c2a9b3d4e5f60000000000000002a", "8f1c2a9b3d4e5f60000000000000002b"]
    assert [row[6] for row in rows] == [False, True]


def test_values_are_taken_as_they_came_and_bytes_that_are_not_utf8_replaced():
    agent = b'say "hi" \\ \t","ref":"spoof caf\xe9'
    payload = b"0000000000000000\n1\ns\n0\n1.000\n::1\n" + agent + b"\nhttps://r.example/\xff\n"
    (row,) = decode_entry(entry(b"2", payload))
    assert row[4] == 'say "hi" \\ \t","ref":"spoof caf\ufffd'
    assert row[5] == "https://r.example/\ufffd"


@pytest.mark.parametrize("payload, reason", [
    (b"0000000000000000\n1\ns\n0\n1.000\n::1\nua\nref", "six lines a click"),
    (b"0000000000000000\n1\ns\n0\n1.000\n::1\nua\n", "six lines a click"),
    (b"000000000000000\n1\ns\n0\n1.000\n::1\nua\nref\n", "prefix"),
    (b"000000000000000G\n1\ns\n0\n1.000\n::1\nua\nref\n", "prefix"),
    (b"0000000000000000\n-1\ns\n0\n1.000\n::1\nua\nref\n", "first number"),
    (b"0000000000000000\nffffffffffffffff\ns\n0\n1.000\n::1\nua\nref\ns\n0\n1.000\n::1\nua\nref\n", "past 16"),
    (b"0000000000000000\n1\ns\nyes\n1.000\n::1\nua\nref\n", "orphan flag"),
    (b"0000000000000000\n1\ns\n0\n1.5\n::1\nua\nref\n", "Unix seconds"),
    (b"0000000000000000\n1\ns\n0\n 1.000\n::1\nua\nref\n", "Unix seconds"),
    (b"0000000000000000\n1\ns\n0\n1000\n::1\nua\nref\n", "Unix seconds"),
])
def test_format_2_entries_that_break_the_contract_are_refused(payload, reason):
    with pytest.raises(BadEntry, match=reason):
        decode_entry(entry(b"2", payload))


def test_format_1_entries_still_read():
    click = {"id": "8F1C2A9B3D4E5F60000000000000002A", "ts": 5, "slug": "abc", "ip": "::1", "ua": "u" * 600,
             "ref": "r", "orphan": True}
    assert decode_entry(entry(b"1", orjson.dumps([click]))) == [
        ("8f1c2a9b3d4e5f60000000000000002a", 5, "abc", "::1", "u" * 600, "r", True)]
    for bad, reason in [(b"{not json", "not JSON"), (b"{}", "not a JSON array"), (b'[{"ts": 1}]', "no 'id'"),
                        (b'[{"id": "x", "ts": 1, "slug": "s"}]', "32 hex")]:
        with pytest.raises(BadEntry, match=reason):
            decode_entry(entry(b"1", bad))


def test_unknown_versions_and_entries_without_clicks_are_refused():
    with pytest.raises(BadEntry, match="record version"):
        decode_entry({b"v": b"3", b"clicks": b""})
    with pytest.raises(BadEntry, match="no clicks"):
        decode_entry({b"v": b"2"})

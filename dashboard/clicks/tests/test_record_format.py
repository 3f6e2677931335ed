"""The importer reads the record format as slingshot/click_record.toml
declares it: its lines in their places, each line's pattern, the older
formats. Pure logic, no database."""

import re

import pytest

from clicks import entries
from clicks.records import BadEntry, decode_entry, encode_entry
from links import slugs
from slingshot.click_record import RECORD

# What decode_entry's rows hold, by the name of the line they come from.
ROW = ("id", "time", "slug", "link", "ip", "ua", "ref", "rule")
# A value for each line that no other line holds, so that a row shows where each came from.
VALUES = {
    "slug": "s1ug",
    "link": "42",
    "rule": "ab3",
    "time": "1763800000.123",
    "ip": "10.0.0.7",
    "ua": "ua/1",
    "ref": "r",
}
OK = {"slug": "s1ug", "link": "42", "rule": "7", "time": "1763800000.123", "ip": "10.0.0.7", "ua": "", "ref": ""}
# Values that test the edges of each line's pattern (and its emptiness).
CANDIDATES = {
    "slug": ["", "x", "é" * 64, "é" * 65, "s" * 64, "s" * 65],
    "link": ["", "0", "1", "9" * 16, "1" + "0" * 16, "01", "-1", "1a"],
    "rule": ["", "1", "99", "100", "0", "ab", "ab1", "ab10", "abab1", "x"],
    "time": ["", "1.000", "0.000", "176380000.12", "1763800000.1234", "123456789012.123", "1234567890123.123", "a.123"],
}


def fields(lines: list[str], version: str = RECORD.version) -> dict:
    return {b"v": version.encode(), b"clicks": ("\n".join(["8f1c2a9b3d4e5f60", "2a", *lines]) + "\n").encode()}


def test_the_importer_reads_the_lines_of_every_version_in_the_places_the_declaration_gives():
    for version in (RECORD.version, *RECORD.older):
        names = RECORD.line_names(version)
        assert entries.LINE_NAMES[version.encode()] == names
        (row,) = decode_entry(fields([VALUES[name] for name in names], version))
        read = dict(zip(ROW, row, strict=True))
        assert read["id"] == "8f1c2a9b3d4e5f60000000000000002a"
        assert read["time"] == 1763800000123
        for name in set(names) - {"time"}:
            assert read[name] == VALUES[name], (version, name)


def test_encode_entry_writes_the_lines_in_the_declared_order():
    click = {"ts": 1763800000123, "slug": "s1ug", "link": 42, "rule": "ab3", "ip": "10.0.0.7", "ua": "ua/1", "ref": "r"}
    written = encode_entry("8f1c2a9b3d4e5f60", 0x2A, [click])
    assert written == {
        "v": RECORD.version.encode(),
        "clicks": fields([VALUES[name] for name in RECORD.line_names(RECORD.version)])[b"clicks"],
    }


def reads(name: str, value: str) -> bool:
    given = {**OK, name: value}
    if not given["link"]:
        given["rule"] = "unknown"  # an orphan visit's
    lines = [given[line] for line in RECORD.line_names(RECORD.version)]
    try:
        decode_entry(fields(lines))
    except BadEntry:
        return False
    return True


@pytest.mark.parametrize("name", sorted(CANDIDATES))
def test_the_importer_takes_a_line_exactly_when_the_declaration_does(name):
    line = RECORD.line(name)
    for value in CANDIDATES[name]:
        declared = line.empty if value == "" else bool(re.fullmatch(line.pattern, value))
        assert reads(name, value) == declared, (name, value)


def test_an_orphan_visits_rule_line_is_the_declared_kinds_and_a_host():
    pattern = RECORD.orphan_pattern()
    values = ["unknown", "password go.example.com", "limit " + "h" * 253, "limit " + "h" * 254, "nope"]
    values += ["unknown ", "disabled a b", "expired a\\b", "scheduled\tx"]
    for value in values:
        lines = [{**OK, "link": "", "rule": value}[name] for name in RECORD.line_names(RECORD.version)]
        try:
            decode_entry(fields(lines))
            taken = True
        except BadEntry:
            taken = False
        assert taken == bool(re.fullmatch(pattern, value)), value
    assert RECORD.kinds == entries.ORPHAN_KINDS


def test_the_declared_slug_length_is_the_slug_rule():
    assert RECORD.line("slug").pattern == f".{{{slugs.MIN_LENGTH},{slugs.MAX_LENGTH}}}"

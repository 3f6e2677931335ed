"""The click stream's record formats (docs/contract.md, "Clicks"), read into
rows the importer parses: (id, ts, slug, ip, ua, ref, orphan), with ts in
Unix milliseconds and every text a str as it came (the enricher cuts what it
stores, clicks.enrichment.UA_MAX and REFERER_MAX).

Format 2 is what the edge writes: lines, so that it copies every value as
nginx hands it over, with nothing to escape. Format 1, a JSON array of click
objects, is what edges before it wrote; entries of both may be in the stream
while an edge is upgraded.
"""
import json
import re

import orjson

CLICK_LINES = 6  # slug, orphan flag, time, address, User-Agent, Referer

_HEX = re.compile(r"[0-9a-f]{16}\n[0-9a-f]{1,16}").fullmatch
_TIMES = re.compile(r"(?:[0-9]{1,12}\.[0-9]{3}\n)*").fullmatch
_CLICK_ID = re.compile(r"[0-9a-fA-F]{32}").fullmatch
_ORPHAN_FLAGS = frozenset(("0", "1"))


class BadEntry(ValueError):
    """A stream entry that breaks the contract; it goes to the dead-letter stream."""


def decode_entry(fields: dict) -> list[tuple]:
    """The click rows of one stream entry, from its fields as Redis returns
    them; raises BadEntry if the entry breaks the contract."""
    version = fields.get(b"v")
    if version != b"2" and version != b"1":
        raise BadEntry(f"unknown record version {version!r}")
    raw = fields.get(b"clicks")
    if raw is None:
        raise BadEntry("entry has no clicks field")
    return decode_lines(raw) if version == b"2" else decode_json(raw)


def decode_lines(raw: bytes) -> list[tuple]:
    """Format 2: the click id prefix (16 hex digits), the first click's number
    (hex), then six lines a click: slug, 1 for an orphan visit or 0, time
    (Unix seconds with three decimals), address, User-Agent, Referer; every
    line ends in a line feed. A click's id is the prefix and its number (the
    first click's plus its place) as 16 hex digits. Bytes that are not UTF-8
    become U+FFFD."""
    lines = raw.decode("utf-8", "replace").split("\n")
    if lines.pop() != "" or len(lines) < 2 or (len(lines) - 2) % CLICK_LINES:
        raise BadEntry("clicks field is not two header lines and six lines a click, each ending in a line feed")
    prefix, first = lines[0], lines[1]
    if not _HEX(f"{prefix}\n{first}"):
        raise BadEntry("click id prefix or first number is not lower-case hex")
    count = (len(lines) - 2) // CLICK_LINES
    if not count:
        return []
    number = int(first, 16)
    if number + count > 2**64:
        raise BadEntry("click numbers run past 16 hex digits")
    # Column by column: each check and conversion is one pass at C speed.
    orphans, times = lines[3::CLICK_LINES], lines[4::CLICK_LINES]
    if not _ORPHAN_FLAGS.issuperset(orphans):
        raise BadEntry("click orphan flag is not 0 or 1")
    if not _TIMES("\n".join(times) + "\n"):
        raise BadEntry("click time is not Unix seconds with three decimals")
    return list(zip(
        [f"{prefix}{n:016x}" for n in range(number, number + count)],
        [int(time.replace(".", "")) for time in times],
        lines[2::CLICK_LINES],
        lines[5::CLICK_LINES],
        lines[6::CLICK_LINES],
        lines[7::CLICK_LINES],
        [flag == "1" for flag in orphans],
    ))


def decode_json(raw: bytes) -> list[tuple]:
    """Format 1: a JSON array of click objects (id, ts, slug, ip, ua, ref,
    orphan)."""
    try:
        clicks = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # Edges of format 1 passed header bytes through as they came: invalid
        # UTF-8 is replaced rather than costing the whole entry.
        try:
            clicks = json.loads(raw.decode("utf-8", "replace"))
        except ValueError as exc:
            raise BadEntry(f"clicks field is not JSON: {exc}") from None
    if not isinstance(clicks, list):
        raise BadEntry("clicks field is not a JSON array")
    rows = []
    for obj in clicks:
        if type(obj) is not dict:
            raise BadEntry("click is not an object")
        try:
            click_id, ts, slug = obj["id"], obj["ts"], obj["slug"]
        except KeyError as missing:
            raise BadEntry(f"click has no {missing.args[0]!r}") from None
        if type(click_id) is not str or not _CLICK_ID(click_id):
            raise BadEntry("click id is not 32 hex digits")
        if type(ts) is not int:
            raise BadEntry("click ts is not an integer")
        if type(slug) is not str:
            raise BadEntry("click slug is not a string")
        ip, ua, ref = obj.get("ip"), obj.get("ua", ""), obj.get("ref", "")
        if type(ua) is not str or type(ref) is not str:
            raise BadEntry("text field is not a string")
        rows.append((click_id.lower(), ts, slug, ip if type(ip) is str else "", ua, ref,
                     obj.get("orphan") is True))
    return rows


def encode_lines(prefix: str, first: int, clicks: list[dict]) -> bytes:
    """Format 2 as the edge writes it, from click objects without ids (ts in
    Unix ms): for tests and benchmarks that stand in for the edge."""
    lines = [prefix, f"{first:x}"]
    for click in clicks:
        seconds, millis = divmod(click["ts"], 1000)
        lines += [click["slug"], "1" if click.get("orphan") else "0", f"{seconds}.{millis:03d}",
                  click.get("ip", ""), click.get("ua", ""), click.get("ref", "")]
    return ("\n".join(lines) + "\n").encode()

"""Click entries of the stream in record formats 5, 4 and 3
(docs/contract.md, "Clicks"), as the edge writes them; format 4, whose
orphan visits have neither kind nor domain, and format 3, without the rule
line, are what older edges left in the stream, read on during an upgrade.

`decode_entry` reads one entry into rows `(id, ts, slug, link, ip, ua, ref,
rule)`: ts in Unix milliseconds, `link` the id of the link that served the
click as the edge wrote it (digits), or '' for an orphan visit, `rule` what
served it ("1".."n" a rule, "ab1".."abn" a split's destination, '' the
link's own url) or, for an orphan visit, its kind and a space and its
domain's host unless that is the default domain ("unknown" for an orphan
visit of format 3 or 4), and every other text as it came; the batch
decides what to keep of them.
"""

import re

from links import slugs
from slingshot.contract import CLICK_RECORD_VERSION, ORPHAN_KINDS

VERSION = CLICK_RECORD_VERSION.encode()
# Lines a click, by record format: slug, link id, [rule,] time, address, User-Agent, Referer.
CLICK_LINES = {VERSION: 7, b"4": 7, b"3": 6}

_HEADER = re.compile(r"[0-9a-f]{16}\n[0-9a-f]{1,16}").fullmatch
# Each check runs over a whole column joined by line feeds: one pass at C speed.
_SLUGS = re.compile(rf"(?:[^\n]{{{slugs.MIN_LENGTH},{slugs.MAX_LENGTH}}}\n)*").fullmatch
# Link ids are below 2^53 (the edge reads them as JSON numbers): 16 digits at most.
_LINKS = re.compile(r"(?:(?:[1-9][0-9]{0,15})?\n)*").fullmatch
# At most 20 rules and 10 destinations (links/rules.py).
_RULES = re.compile(r"(?:(?:(?:ab)?[1-9][0-9]?)?\n)*").fullmatch
# An orphan visit's kind, then its domain's host: no space, control
# character or backslash, so that it goes into COPY text as it is.
_ORPHANS = re.compile(rf"(?:(?:{'|'.join(ORPHAN_KINDS)})(?: [^\s\x00-\x1f\x7f\\]{{1,253}})?\n)*").fullmatch
_TIMES = re.compile(r"(?:[0-9]{1,12}\.[0-9]{3}\n)*").fullmatch


class BadEntry(ValueError):
    """An entry that breaks the contract; it goes to the dead-letter stream."""


def decode_entry(fields: dict) -> list[tuple]:
    """The click rows of one entry, from its fields as Redis returns them.

    `clicks` is two header lines, the click id prefix (16 hex digits) and the
    first click's number (hex), then seven lines a click (six in format 3):
    slug, link id (empty for an orphan visit), rule (empty for the link's
    own url; an orphan visit's kind and host in format 5; not in format 3),
    time (Unix seconds with three decimals), address, User-Agent, Referer; every line ends in a line feed. A click's
    id is the prefix and its number (the first click's plus its place) as 16
    hex digits. Bytes that are not UTF-8 become U+FFFD. Raises BadEntry if
    the entry breaks the contract."""
    version = fields.get(b"v")
    per = CLICK_LINES.get(version)
    if per is None:
        raise BadEntry(f"unknown record version {version!r}")
    raw = fields.get(b"clicks")
    if raw is None:
        raise BadEntry("entry has no clicks field")
    lines = raw.decode("utf-8", "replace").split("\n")
    if lines.pop() != "" or len(lines) < 2 or (len(lines) - 2) % per:
        raise BadEntry(f"clicks field is not two header lines and {per} lines a click, each ending in a line feed")
    prefix, first = lines[0], lines[1]
    if not _HEADER(f"{prefix}\n{first}"):
        raise BadEntry("click id prefix or first number is not lower-case hex")
    count = (len(lines) - 2) // per
    if not count:
        return []
    number = int(first, 16)
    if number + count > 2**64:
        raise BadEntry("click numbers run past 16 hex digits")
    at = per - 4  # the time's line within a click, from the second header line
    slug_lines, link_lines, times = lines[2::per], lines[3::per], lines[at + 2 :: per]
    if not _SLUGS("\n".join(slug_lines) + "\n"):
        raise BadEntry(f"click slug is not {slugs.MIN_LENGTH} to {slugs.MAX_LENGTH} characters")
    if not _LINKS("\n".join(link_lines) + "\n"):
        raise BadEntry("click link id is not a positive integer of at most 16 digits, nor empty")
    if per == 7:
        rules = lines[4::per]
    else:
        rules = [""] * count
    if version == VERSION:
        served = [rule for link, rule in zip(link_lines, rules, strict=True) if link]
        orphans = [rule for link, rule in zip(link_lines, rules, strict=True) if not link]
        if not _ORPHANS("\n".join([*orphans, ""])):
            raise BadEntry(f"orphan visit is not one of {', '.join(ORPHAN_KINDS)}, then maybe a space and a host")
    else:
        served = rules
        rules = [rule if link else "unknown" for link, rule in zip(link_lines, rules, strict=True)]
    if not _RULES("\n".join([*served, ""])):
        raise BadEntry("click rule is not a rule number, ab and a destination number, nor empty")
    if not _TIMES("\n".join(times) + "\n"):
        raise BadEntry("click time is not Unix seconds with three decimals")
    return list(
        zip(
            [f"{prefix}{n:016x}" for n in range(number, number + count)],
            [int(time.replace(".", "")) for time in times],
            slug_lines,
            link_lines,
            lines[at + 3 :: per],
            lines[at + 4 :: per],
            lines[at + 5 :: per],
            rules,
            strict=True,
        )
    )


def encode_entry(prefix: str, first: int, clicks: list[dict]) -> dict[str, bytes]:
    """The fields of an entry as the edge writes it, from clicks without ids
    (`ts` in Unix ms, `slug`, `link` the link's id or None for an orphan
    visit, and optionally `rule`, `ip`, `ua`, `ref`, and for an orphan visit
    `kind` and `domain`, its host or '' for the default domain): for the
    tests and benchmarks that stand in for the edge."""
    lines = [prefix, f"{first:x}"]
    for click in clicks:
        seconds, millis = divmod(click["ts"], 1000)
        link = click.get("link")
        if link is None:
            domain = click.get("domain", "")
            third = click.get("kind", "unknown") + (f" {domain}" if domain else "")
        else:
            third = click.get("rule", "")
        lines += [
            click["slug"],
            "" if link is None else str(link),
            third,
            f"{seconds}.{millis:03d}",
            click.get("ip", ""),
            click.get("ua", ""),
            click.get("ref", ""),
        ]
    return {"v": VERSION, "clicks": ("\n".join(lines) + "\n").encode()}

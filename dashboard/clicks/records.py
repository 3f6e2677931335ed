"""Click entries of the stream in record format 3 (docs/contract.md, "Clicks"),
as the edge writes them.

`decode_entry` reads one entry into rows `(id, ts, slug, link, ip, ua, ref)`:
ts in Unix milliseconds, `link` the id of the link that served the click as
the edge wrote it (digits), or '' for an orphan visit, and every other text as
it came; the batch decides what to keep of them.
"""

import re

from links import slugs
from slingshot.contract import CLICK_RECORD_VERSION

VERSION = CLICK_RECORD_VERSION.encode()
CLICK_LINES = 6  # slug, link id, time, address, User-Agent, Referer

_HEADER = re.compile(r"[0-9a-f]{16}\n[0-9a-f]{1,16}").fullmatch
# Each check runs over a whole column joined by line feeds: one pass at C speed.
_SLUGS = re.compile(rf"(?:[^\n]{{{slugs.MIN_LENGTH},{slugs.MAX_LENGTH}}}\n)*").fullmatch
# Link ids are below 2^53 (the edge reads them as JSON numbers): 16 digits at most.
_LINKS = re.compile(r"(?:(?:[1-9][0-9]{0,15})?\n)*").fullmatch
_TIMES = re.compile(r"(?:[0-9]{1,12}\.[0-9]{3}\n)*").fullmatch


class BadEntry(ValueError):
    """An entry that breaks the contract; it goes to the dead-letter stream."""


def decode_entry(fields: dict) -> list[tuple]:
    """The click rows of one entry, from its fields as Redis returns them.

    `clicks` is two header lines, the click id prefix (16 hex digits) and the
    first click's number (hex), then six lines a click: slug, link id (empty
    for an orphan visit), time (Unix seconds with three decimals), address,
    User-Agent, Referer; every line ends in a line feed. A click's id is the
    prefix and its number (the first click's plus its place) as 16 hex
    digits. Bytes that are not UTF-8 become U+FFFD. Raises BadEntry if the
    entry breaks the contract."""
    version = fields.get(b"v")
    if version != VERSION:
        raise BadEntry(f"unknown record version {version!r}")
    raw = fields.get(b"clicks")
    if raw is None:
        raise BadEntry("entry has no clicks field")
    lines = raw.decode("utf-8", "replace").split("\n")
    if lines.pop() != "" or len(lines) < 2 or (len(lines) - 2) % CLICK_LINES:
        raise BadEntry("clicks field is not two header lines and six lines a click, each ending in a line feed")
    prefix, first = lines[0], lines[1]
    if not _HEADER(f"{prefix}\n{first}"):
        raise BadEntry("click id prefix or first number is not lower-case hex")
    count = (len(lines) - 2) // CLICK_LINES
    if not count:
        return []
    number = int(first, 16)
    if number + count > 2**64:
        raise BadEntry("click numbers run past 16 hex digits")
    slug_lines, link_lines, times = lines[2::CLICK_LINES], lines[3::CLICK_LINES], lines[4::CLICK_LINES]
    if not _SLUGS("\n".join(slug_lines) + "\n"):
        raise BadEntry(f"click slug is not {slugs.MIN_LENGTH} to {slugs.MAX_LENGTH} characters")
    if not _LINKS("\n".join(link_lines) + "\n"):
        raise BadEntry("click link id is not a positive integer of at most 16 digits, nor empty")
    if not _TIMES("\n".join(times) + "\n"):
        raise BadEntry("click time is not Unix seconds with three decimals")
    return list(
        zip(
            [f"{prefix}{n:016x}" for n in range(number, number + count)],
            [int(time.replace(".", "")) for time in times],
            slug_lines,
            link_lines,
            lines[5::CLICK_LINES],
            lines[6::CLICK_LINES],
            lines[7::CLICK_LINES],
            strict=True,
        )
    )


def encode_entry(prefix: str, first: int, clicks: list[dict]) -> dict[str, bytes]:
    """The fields of an entry as the edge writes it, from clicks without ids
    (`ts` in Unix ms, `slug`, `link` the link's id or None for an orphan
    visit, and optionally `ip`, `ua`, `ref`): for the tests and benchmarks
    that stand in for the edge."""
    lines = [prefix, f"{first:x}"]
    for click in clicks:
        seconds, millis = divmod(click["ts"], 1000)
        link = click.get("link")
        lines += [
            click["slug"],
            "" if link is None else str(link),
            f"{seconds}.{millis:03d}",
            click.get("ip", ""),
            click.get("ua", ""),
            click.get("ref", ""),
        ]
    return {"v": VERSION, "clicks": ("\n".join(lines) + "\n").encode()}

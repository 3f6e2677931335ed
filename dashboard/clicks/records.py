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

An entry's lines, their order and their limits are declared once, in
slingshot/click_record.toml (docs/contract.md shows it). A click's id is
the prefix and its number (the first click's plus its place) as 16 hex
digits. Bytes that are not UTF-8 become U+FFFD. An entry that breaks the contract raises BadEntry.

Entries are read in C (entries.pyx), with the batch's rows (batch.py).
"""

from slingshot.click_record import RECORD

from .entries import VERSION, BadEntry, decode_entry

__all__ = ["VERSION", "BadEntry", "decode_entry", "encode_entry"]


def _rule_line(click: dict) -> str:
    if click.get("link") is None:
        domain = click.get("domain", "")
        return click.get("kind", "unknown") + (f" {domain}" if domain else "")
    return click.get("rule", "")


# What each of a click's lines (slingshot/click_record.toml) holds of a click given to encode_entry.
_LINE_VALUES = {
    "slug": lambda click: click["slug"],
    "link": lambda click: "" if click.get("link") is None else str(click["link"]),
    "rule": _rule_line,
    "time": lambda click: "{}.{:03d}".format(*divmod(click["ts"], 1000)),
    "ip": lambda click: click.get("ip", ""),
    "ua": lambda click: click.get("ua", ""),
    "ref": lambda click: click.get("ref", ""),
}
_LINES = [_LINE_VALUES[name] for name in RECORD.line_names(RECORD.version)]


def encode_entry(prefix: str, first: int, clicks: list[dict]) -> dict[str, bytes]:
    """The fields of an entry as the edge writes it, from clicks without ids
    (`ts` in Unix ms, `slug`, `link` the link's id or None for an orphan
    visit, and optionally `rule`, `ip`, `ua`, `ref`, and for an orphan visit
    `kind` and `domain`, its host or '' for the default domain): for the
    tests and benchmarks that stand in for the edge. Its lines are the
    record format's (slingshot/click_record.toml), in its order."""
    lines = [prefix, f"{first:x}"]
    for click in clicks:
        lines += [value(click) for value in _LINES]
    return {"v": VERSION, "clicks": ("\n".join(lines) + "\n").encode()}

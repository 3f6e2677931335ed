"""The click stream read as docs/contract.md says, for the edge tests and
make bench: a reading of the contract of its own, apart from the importer's
(dashboard/clicks/records.py), taking the record format's version, lines
and orphan kinds from its declaration (dashboard/slingshot/click_record.toml)
and nothing else of the dashboard, and free of side effects on import."""

import re
import tomllib
from pathlib import Path

SPEC = tomllib.loads((Path(__file__).resolve().parents[2] / "dashboard/slingshot/click_record.toml").read_text())
VERSION = SPEC["version"].encode()
LINES = tuple(line["name"] for line in SPEC["line"])
ORPHAN_KINDS = tuple(kind["name"] for kind in SPEC["orphan_kind"])


def decode_clicks(fields: dict[bytes, bytes]) -> list[dict]:
    """The clicks of one stream entry, read as docs/contract.md says
    (record format 5), as dicts: id, ts (Unix ms), slug, link (the link's
    id, as digits), ip, ua, ref, and rule when one served it; an orphan
    visit has no link but orphan=True, its kind and its domain's host ("" for
    the default domain)."""
    assert fields[b"v"] == VERSION
    lines = fields[b"clicks"].decode("utf-8", "replace").split("\n")
    assert lines.pop() == "" and (len(lines) - 2) % len(LINES) == 0
    prefix, first = lines[0], int(lines[1], 16)
    assert re.fullmatch(r"[0-9a-f]{16}", prefix)
    clicks = []
    for number, at in enumerate(range(2, len(lines), len(LINES)), start=first):
        line = dict(zip(LINES, lines[at : at + len(LINES)], strict=True))
        slug, link, rule, msec, ip, ua, ref = (
            line[name] for name in ("slug", "link", "rule", "time", "ip", "ua", "ref")
        )
        assert re.fullmatch(r"[0-9]{0,19}", link) and re.fullmatch(r"\d+\.\d{3}", msec)
        click = {
            "id": f"{prefix}{number:016x}",
            "ts": int(msec.replace(".", "")),
            "slug": slug,
            "ip": ip,
            "ua": ua,
            "ref": ref,
        }
        if link:
            assert re.fullmatch(r"(?:(?:ab)?[1-9][0-9]?)?", rule)
            click["link"] = link
            if rule:
                click["rule"] = rule
        else:
            kind, _, domain = rule.partition(" ")
            assert kind in ORPHAN_KINDS and " " not in domain
            click.update(orphan=True, kind=kind, domain=domain)
        clicks.append(click)
    return clicks

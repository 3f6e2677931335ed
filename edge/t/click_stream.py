"""The click stream read as docs/contract.md says, for the edge tests and
make bench: a reading of the contract of its own, apart from the importer's
(dashboard/clicks/records.py), and free of side effects on import."""

import re

# The kinds of docs/contract.md (what slingshot.contract holds too).
ORPHAN_KINDS = ("unknown", "disabled", "scheduled", "expired", "limit", "password")


def decode_clicks(fields: dict[bytes, bytes]) -> list[dict]:
    """The clicks of one stream entry, read as docs/contract.md says
    (record format 5), as dicts: id, ts (Unix ms), slug, link (the link's
    id, as digits), ip, ua, ref, and rule when one served it; an orphan
    visit has no link but orphan=True, its kind and its domain's host ("" for
    the default domain)."""
    assert fields[b"v"] == b"5"
    lines = fields[b"clicks"].decode("utf-8", "replace").split("\n")
    assert lines.pop() == "" and (len(lines) - 2) % 7 == 0
    prefix, first = lines[0], int(lines[1], 16)
    assert re.fullmatch(r"[0-9a-f]{16}", prefix)
    clicks = []
    for number, at in enumerate(range(2, len(lines), 7), start=first):
        slug, link, rule, msec, ip, ua, ref = lines[at : at + 7]
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

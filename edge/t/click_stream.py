"""The click stream read as docs/contract.md says, for the edge tests and
make bench: a reading of the contract of its own, apart from the importer's
(dashboard/clicks/clickstream.py), and free of side effects on import."""
import re


def decode_clicks(fields: dict[bytes, bytes]) -> list[dict]:
    """The clicks of one stream entry, read as docs/contract.md says
    (record format 2), as dicts: id, ts (Unix ms), slug, ip, ua, ref, and
    orphan (True) for an orphan visit."""
    assert fields[b"v"] == b"2"
    lines = fields[b"clicks"].decode("utf-8", "replace").split("\n")
    assert lines.pop() == "" and (len(lines) - 2) % 6 == 0
    prefix, first = lines[0], int(lines[1], 16)
    assert re.fullmatch(r"[0-9a-f]{16}", prefix)
    clicks = []
    for number, at in enumerate(range(2, len(lines), 6), start=first):
        slug, orphan, msec, ip, ua, ref = lines[at:at + 6]
        assert orphan in ("0", "1") and re.fullmatch(r"\d+\.\d{3}", msec)
        click = {"id": f"{prefix}{number:016x}", "ts": int(msec.replace(".", "")), "slug": slug,
                 "ip": ip, "ua": ua, "ref": ref}
        if orphan == "1":
            click["orphan"] = True
        clicks.append(click)
    return clicks

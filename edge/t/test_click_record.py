"""What a real edge writes to the click stream, read with a parser made from
the record format's declaration alone (dashboard/slingshot/click_record.toml),
and the document and the edge's own constants held to that declaration."""

import re
import time
import uuid
from pathlib import Path

import pytest
from click_stream import SPEC
from edge_helpers import publish, wait_until
from test_contract import lua_constants
from test_unlock import NEWS, pass_cookie, unlock, visit

from slingshot.click_record import RECORD
from slingshot.contract import CLICKS_STREAM
from testing.factories import make_link

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parent.parent.parent
DOC = (REPO / "docs" / "contract.md").read_text()
MAX_BYTES = {line["name"]: line["max_bytes"] for line in SPEC["line"] if "max_bytes" in line}


def matches(line: dict, raw: bytes, pattern: str | None = None) -> bool:
    """Whether a line's bytes are what the declaration allows; bytes that are
    not UTF-8 (a character cut in half) read as U+FFFD."""
    if not raw:
        return line["empty"]
    if "max_bytes" in line and len(raw) > line["max_bytes"]:
        return False
    pattern = pattern or line.get("pattern")
    return pattern is None or re.fullmatch(pattern, raw.decode("utf-8", "replace")) is not None


def parse(fields: dict[bytes, bytes]) -> list[dict]:
    """An entry's clicks as dicts of their lines by name, each line checked
    against the declaration: the spec, and nothing of the importer's."""
    assert set(fields) == {field["name"].encode() for field in SPEC["field"]}
    assert fields[b"v"].decode() == SPEC["version"]
    lines = fields[b"clicks"].split(b"\n")
    assert lines.pop() == b"", "every line ends in a line feed"
    header, names = SPEC["header"], [line["name"] for line in SPEC["line"]]
    assert len(lines) > len(header) and (len(lines) - len(header)) % len(names) == 0
    for line, raw in zip(header, lines, strict=False):
        assert matches(line, raw), (line["name"], raw)
    kinds = "|".join(kind["name"] for kind in SPEC["orphan_kind"])
    clicks = []
    for at in range(len(header), len(lines), len(names)):
        raw = dict(zip(names, lines[at : at + len(names)], strict=True))
        for line in SPEC["line"]:
            orphan = line.get("orphan_pattern") if not raw["link"] else None
            pattern = orphan.replace("{kinds}", kinds) if orphan else None
            assert matches(line, raw[line["name"]], pattern), (line["name"], raw[line["name"]])
        clicks.append({name: value.decode("utf-8", "replace") for name, value in raw.items()})
    return clicks


def written(rds, slug: str, count: int) -> list[dict]:
    """The clicks of `slug` in the stream, once there are `count`."""

    def found() -> list[dict]:
        return [click for _, fields in rds.xrange(CLICKS_STREAM) for click in parse(fields) if click["slug"] == slug]

    wait_until(lambda: len(found()) >= count, what=f"{count} clicks of {slug}")
    time.sleep(0.2)  # any extra click would show too
    clicks = found()
    assert len(clicks) == count
    return clicks


def slug(letter: str) -> str:
    return letter + uuid.uuid4().hex[:10]


def test_the_document_and_the_edge_use_the_declared_format():
    for table in RECORD.markdown():
        assert table in DOC, f"docs/contract.md is out of date: python dashboard/slingshot/click_record.py\n{table}"
    assert f"### Record format {SPEC['version']}" in DOC
    clickbuf = lua_constants("clickbuf")
    assert (int(clickbuf["UA_MAX"]), int(clickbuf["REFERER_MAX"])) == (MAX_BYTES["ua"], MAX_BYTES["ref"])
    # Its lines as one: a list may run over several.
    contract = re.sub(r",\n\s+", ", ", (REPO / "edge" / "slingshot" / "contract.lua").read_text())
    assert f'_M.CLICK_RECORD_VERSION = "{SPEC["version"]}"' in contract
    kinds = ", ".join(f'"{kind["name"]}"' for kind in SPEC["orphan_kind"])
    assert f"_M.ORPHAN_KINDS = {{ {kinds} }}" in contract


def test_every_kind_of_click_a_real_edge_writes_reads_by_the_declaration(password_edge, rds, owner, two_domains):
    edge, now = password_edge, int(time.time())
    plain, ruled, long = slug("p"), slug("r"), slug("c")
    publish(rds, plain)
    publish(
        rds, ruled, rules=[{"url": "https://nl.example/", "conditions": [{"type": "query", "key": "l", "value": "nl"}]}]
    )
    publish(rds, long)
    states = {
        "disabled": {"active": False},
        "scheduled": {"valid_since": now + 3600},
        "expired": {"expires_at": now - 5},
    }
    orphans = {kind: slug(kind[0]) for kind in (*states, "limit", "unknown")}
    for kind, fields in states.items():
        publish(rds, orphans[kind], **fields)
    publish(rds, orphans["limit"], max_visits=1)
    locked = make_link(owner=owner, url="https://example.com/l", slug=slug("l"), password="hunter2")
    go = two_domains[0]
    on_go = make_link(owner=owner, url="https://example.com/go", slug=slug("g"), domain=go)
    wait_until(
        lambda: edge.request(f"/{on_go.slug}", headers={"Host": go.host}).status == 302, what="the domain served"
    )

    assert edge.request(f"/{plain}", headers={"Referer": "https://r.example/"}).status == 302
    assert edge.request(f"/{ruled}?l=nl").status == 302
    # UTF-8 on the wire (http.client would send a str as Latin-1).
    long_ua, long_referer = ("x" + "é" * 1000).encode(), "https://r.example/" + "r" * 3000
    assert edge.request(f"/{long}", headers={"User-Agent": long_ua, "Referer": long_referer}).status == 302
    for kind in states:
        assert edge.request(f"/{orphans[kind]}").status in (404, 410)
    assert edge.request(f"/{orphans['limit']}").status == 302
    assert edge.request(f"/{orphans['limit']}").status == 410
    assert edge.request(f"/{orphans['unknown']}").status == 404
    assert edge.request(f"/{orphans['unknown']}", headers={"Host": go.host}).status == 404
    answer = unlock(edge, f"/{locked.slug}", "hunter2", referer=NEWS)
    assert visit(edge, f"/{locked.slug}", headers={"Cookie": pass_cookie(answer)}).status == 302

    (click,) = written(rds, plain, 1)
    assert (click["rule"], click["ref"], click["ip"]) == ("", "https://r.example/", "127.0.0.1") and click["link"]
    assert abs(float(click["time"]) - time.time()) < 60
    assert written(rds, ruled, 1)[0]["rule"] == "1"
    (click,) = written(rds, long, 1)
    # Cut to the declared bytes, the User-Agent in the middle of a character.
    assert click["ua"] == long_ua[: MAX_BYTES["ua"]].decode("utf-8", "replace")
    assert click["ua"].endswith("\ufffd") and click["ref"] == long_referer[: MAX_BYTES["ref"]]
    for kind in states:
        (click,) = written(rds, orphans[kind], 1)
        assert (click["link"], click["rule"]) == ("", kind)
    assert sorted(click["rule"] for click in written(rds, orphans["limit"], 2)) == ["", "limit"]
    assert sorted(click["rule"] for click in written(rds, orphans["unknown"], 2)) == ["unknown", f"unknown {go.host}"]
    clicks = written(rds, locked.slug, 2)
    assert sorted((click["link"] != "", click["rule"], click["ref"]) for click in clicks) == [
        (False, "password", NEWS),
        (True, "", NEWS),
    ]

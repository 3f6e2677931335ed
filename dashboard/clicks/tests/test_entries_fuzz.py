"""The entry reader in C (clicks/entries.pyx) on what hypothesis draws:
whatever bytes an entry holds, it is read or refused with BadEntry, never
anything else; and what the edge writes reads back as it was written."""

import uuid
from datetime import datetime, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clicks.batch import CLICK_COLUMNS, BatchMaker
from clicks.copy_rows import binary_rows
from clicks.enrichment import Enricher
from clicks.records import BadEntry, decode_entry, encode_entry
from slingshot.contract import ORPHAN_KINDS

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)
TS = int(NOW.timestamp() * 1000)
MAKER = BatchMaker(Enricher(enabled=False))
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text a click's line may hold: anything but a line feed.
line = st.text(st.characters(blacklist_characters="\n", blacklist_categories=["Cs"]), max_size=40)
click = st.fixed_dictionaries(
    {
        "ts": st.integers(TS - 86_400_000, TS),
        "slug": st.text(st.characters(blacklist_characters="\n", blacklist_categories=["Cs"]), min_size=1, max_size=64),
        "link": st.one_of(st.none(), st.integers(1, 2**53)),
        "rule": st.sampled_from(["", "1", "20", "ab1", "ab10"]),
        "kind": st.sampled_from(ORPHAN_KINDS),
        "domain": st.sampled_from(["", "go.example.com", "xn--bcher-kva.example"]),
        "ip": line,
        "ua": line,
        "ref": line,
    }
)


@FUZZ
@given(st.lists(click, min_size=1, max_size=8), st.integers(0, 2**64 - 9))
def test_what_the_edge_writes_reads_back_as_written(clicks, first):
    fields = encode_entry("0123456789abcdef", first, clicks)
    rows = decode_entry({key.encode(): value for key, value in fields.items()})
    assert rows == [
        (
            f"0123456789abcdef{first + place:016x}",
            c["ts"],
            c["slug"],
            "" if c["link"] is None else str(c["link"]),
            c["ip"],
            c["ua"],
            c["ref"],
            c["rule"] if c["link"] is not None else c["kind"] + (f" {c['domain']}" if c["domain"] else ""),
        )
        for place, c in enumerate(clicks)
    ]
    batch = MAKER.make([(b"1-0", {key.encode(): value for key, value in fields.items()})], now=NOW)
    assert (batch.clicks, batch.orphans, batch.dead) == (
        sum(c["link"] is not None for c in clicks),
        sum(c["link"] is None for c in clicks),
        [],
    )
    stored = binary_rows(batch.click_rows, CLICK_COLUMNS)
    assert [(row[0], row[2], row[13]) for row in stored] == [
        (uuid.UUID(row[0]), row[2].replace("\x00", ""), row[7] or None)  # PostgreSQL's text holds no NUL
        for row in rows
        if row[3]
    ]
    assert batch.orphan_rows.count(b"\n") == batch.orphans


def _mutated(data: st.DataObject) -> bytes:
    """A valid entry's bytes with a few bytes changed, inserted or cut."""
    clicks = data.draw(st.lists(click, min_size=1, max_size=4))
    payload = bytearray(encode_entry("0123456789abcdef", 1, clicks)["clicks"])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(payload)))
        what = data.draw(st.sampled_from(["set", "insert", "cut"]))
        byte = data.draw(st.sampled_from([0, 9, 10, 13, 32, 46, 48, 57, 92, 97, 98, 0x80, 0xC3, 0xE2, 0xFF]))
        if what == "insert" or at == len(payload):
            payload.insert(at, byte)
        elif what == "set":
            payload[at] = byte
        else:
            del payload[at : at + data.draw(st.integers(1, 8))]
    return bytes(payload)


@FUZZ
@given(st.data(), st.sampled_from([b"3", b"4", b"5"]))
def test_any_bytes_are_read_or_refused_and_a_batch_keeps_the_rest(data, version):
    payload = _mutated(data) if data.draw(st.booleans()) else data.draw(st.binary(max_size=300))
    entry = {b"v": version, b"clicks": payload}
    try:
        rows = decode_entry(entry)
    except BadEntry:
        rows = None
    good = {b"v": b"5", b"clicks": encode_entry("fedcba9876543210", 0, [{"ts": TS, "slug": "s", "link": 7}])["clicks"]}
    batch = MAKER.make([(b"1-0", entry), (b"2-0", good)], now=NOW)
    # The good entry is stored whatever its neighbour held; the other is
    # stored as read, or refused whole.
    assert uuid.UUID("fedcba98765432100000000000000000") in [
        row[0] for row in binary_rows(batch.click_rows, CLICK_COLUMNS)
    ]
    if rows is None or any(not (TS - 400 * 86_400_000 <= row[1] <= TS + 86_400_000) for row in rows):
        assert [entry_id for entry_id, _, _ in batch.dead] == [b"1-0"]
    else:
        assert batch.dead == [] and batch.size == len(rows) + 1

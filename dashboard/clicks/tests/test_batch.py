"""Entries to a batch (clicks/batch.py): pure, no database, no Redis."""

import ipaddress
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from clicks.batch import CLICK_COLUMNS, ORPHAN_COLUMNS, BatchMaker
from clicks.copy_rows import binary_rows
from clicks.enrichment import Enricher
from testing.streams import entry

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
BOT = "Googlebot/2.1 (+http://www.google.com/bot.html)"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)
TS = int(NOW.timestamp() * 1000)


@pytest.fixture(scope="module")
def maker():
    return BatchMaker(Enricher())


def click(**values) -> dict:
    return {"ts": TS, "slug": "abc", "link": 7, "ip": "203.0.113.9", "ua": CHROME, "ref": "", **values}


def rows(payload: bytes, columns) -> list[dict]:
    """Rows of COPY text, each a dict of the text of its columns."""
    return [dict(zip(columns, line.split("\t"), strict=True)) for line in payload.decode().splitlines()]


def clicks(batch) -> list[dict]:
    """The batch's click rows (binary COPY), each a dict of its columns' values."""
    assert batch.click_format == "binary"
    return [dict(zip(CLICK_COLUMNS, row, strict=True)) for row in binary_rows(batch.click_rows, CLICK_COLUMNS)]


def test_clicks_and_orphan_visits_become_the_rows_of_their_tables(maker):
    batch = maker.make(
        [
            entry([click(ref="https://news.example/a"), click(link=8, ua=BOT, rule="ab2")]),
            entry([click(slug="gone", link=None, kind="disabled", domain="go.example.com")]),
        ],
        now=NOW,
    )
    assert (batch.clicks, batch.orphans, batch.size, batch.dead) == (2, 1, 3, [])
    assert batch.link_ids == {7, 8}
    assert len(batch.ack_ids) == 2
    assert batch.first_ms == batch.last_ms == TS
    stored = clicks(batch)
    assert [(row["link_id"], row["browser"], row["is_bot"], row["rule"]) for row in stored] == [
        (7, "Chrome", False, None),
        (8, "Googlebot", True, "ab2"),
    ]
    assert stored[0]["referer_host"] == "news.example" and str(stored[0]["ip"]) == "203.0.113.0"  # anonymised
    (orphan,) = rows(batch.orphan_rows, ORPHAN_COLUMNS)
    assert (orphan["slug"], orphan["kind"], orphan["domain"]) == ("gone", "disabled", "go.example.com")
    # Each user agent once, by the id the clicks refer to it with.
    assert set(batch.agents.values()) == {CHROME, BOT}
    assert {row["user_agent_id"] for row in stored} == set(batch.agents)
    # A visitor row per link, hour and bot flag, and breakdown rows for each dimension.
    visitors = [line.split("\t") for line in batch.visitor_rows.decode().splitlines()]
    assert sorted((link, bot) for link, _, bot, _ in visitors) == [("7", "f"), ("8", "t")]
    assert all(hashes.startswith("{") and "," not in hashes for *_, hashes in visitors)
    assert b"\trule\tab2\t" in batch.breakdown_rows


def test_an_entry_that_breaks_the_contract_goes_to_dead_letters_whole_and_costs_the_others_nothing(maker):
    bad = (b"1-0", {b"v": b"5", b"clicks": b"not\nlines\n"})
    too_old = entry([click(ts=int((NOW - timedelta(days=401)).timestamp() * 1000))])
    good = entry([click()])
    batch = maker.make([bad, too_old, good], now=NOW)
    assert batch.clicks == 1
    assert [reason for _, _, reason in batch.dead] == [
        "click id prefix or first number is not lower-case hex",
        "click time is out of range",
    ]
    # Every entry is acknowledged: the dead ones once copied to the dead letters.
    assert batch.ack_ids == [bad[0], too_old[0], good[0]]


def test_an_entry_deleted_while_pending_is_acknowledged_with_nothing_to_store(maker):
    batch = maker.make([(b"9-0", {})], now=NOW)
    assert (batch.ack_ids, batch.size, batch.dead) == ([b"9-0"], 0, [])


def test_the_values_a_copy_would_misread_are_kept_in_binary_rows_and_escaped_in_text(maker):
    odd = {"ref": "https://r.example/a\\b", "ua": "tab\there"}
    batch = maker.make([entry([click(**odd), click(slug="gone", link=None, **odd)])], now=NOW)
    (row,) = clicks(batch)
    assert row["referer"] == "https://r.example/a\\b"  # binary COPY: as it is
    (orphan,) = rows(batch.orphan_rows, ORPHAN_COLUMNS)
    assert (orphan["referer"], orphan["user_agent"]) == ("https://r.example/a\\\\b", "tab\\there")
    assert batch.agents and "tab\there" in batch.agents.values()


def test_the_breakdown_counts_each_click_once_in_every_dimension_as_a_plain_count_would(monkeypatch):
    import random
    from collections import Counter

    from clicks import batch as batch_module

    rng = random.Random(7)
    agents = [CHROME, BOT, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148 Safari/604.1"]
    clicks = [
        click(
            ts=TS - rng.randint(0, 3) * 3_600_000 - rng.randint(0, 999),
            link=rng.choice([7, 8, 123456789012]),
            ip=rng.choice(["203.0.113.9", "198.51.100.7", "2001:db8::1", "bad"]),
            ua=rng.choice(agents),
            ref=rng.choice(["", "https://news.example/a", "https://b.example/x"]),
            rule=rng.choice(["", "", "3", "ab2"]),
        )
        for _ in range(400)
    ]
    expected = Counter()
    enricher = Enricher()
    for c in clicks:
        agent, hour = enricher.agent(c["ua"]), c["ts"] // 3_600_000
        values = {
            "browser": agent.browser,
            "os": agent.os,
            "device": agent.device,
            "referer_host": enricher.referer(c["ref"]).host,
            "country": enricher.ip(c["ip"]).country,
            "rule": c["rule"],
        }
        for dimension, value in values.items():
            if dimension != "rule" or value:
                expected[str(c["link"]), str(hour), dimension, value, "clicks"] += 1
                expected[str(c["link"]), str(hour), dimension, value, "human"] += not agent.is_bot
    # A cache that starts again between two batches (CACHE_MAX) changes no count.
    monkeypatch.setattr(batch_module, "CACHE_MAX", 5)
    maker = BatchMaker(Enricher())
    counted = Counter()
    for part in (clicks[:200], clicks[200:]):
        made = maker.make([entry(part[i : i + 50]) for i in range(0, len(part), 50)], now=NOW)
        for line in made.breakdown_rows.decode().splitlines():
            link, hour, dimension, value, n, human = line.split("\t")
            counted[link, hour, dimension, value, "clicks"] += int(n)
            counted[link, hour, dimension, value, "human"] += int(human)
        keys = [tuple(line.split("\t")[:4]) for line in made.breakdown_rows.decode().splitlines()]
        assert len(keys) == len(set(keys))  # one row a key: the upsert takes each once
    assert +counted == +expected


def test_entries_of_older_formats_and_values_copy_would_misread_become_the_same_rows(maker):
    at = f"{TS // 1000}.{TS % 1000:03d}".encode()
    # Format 3 (no rule line) and 4 (an orphan visit's rule line empty),
    # as an older edge left them in the stream; an agent that is not UTF-8.
    three = (
        b"efefefefefefefef\na\nx\n\n" + at + b"\n203.0.113.9\nbad\xffagent\n\ny\n9\n" + at + b"\n203.0.113.9\nua\n\n"
    )
    four = b"cdcdcdcdcdcdcdcd\n0\nz\n\n\n" + at + b"\n::1\nua\n\nw\n8\nab3\n" + at + b"\n::1\nua\n\n"
    five = entry([click(slug="a\\b\x00c\rd", link=7, ref="https://r.example/\t")])
    batch = maker.make(
        [(b"3-0", {b"v": b"3", b"clicks": three}), (b"4-0", {b"v": b"4", b"clicks": four}), five], now=NOW
    )
    assert (batch.clicks, batch.orphans, batch.dead) == (3, 2, [])
    served = {row["click_id"].hex: row for row in clicks(batch)}
    orphans = {row["click_id"]: row for row in rows(batch.orphan_rows, ORPHAN_COLUMNS)}
    assert (served["efefefefefefefef000000000000000b"]["slug"], served["efefefefefefefef000000000000000b"]["rule"]) == (
        "y",
        None,
    )
    assert served["cdcdcdcdcdcdcdcd0000000000000001"]["rule"] == "ab3"
    assert orphans["efefefefefefefef000000000000000a"]["user_agent"] == "bad\ufffdagent"
    assert {(row["kind"], row["domain"]) for row in orphans.values()} == {("unknown", "")}
    (seven,) = [row for row in served.values() if row["link_id"] == 7]
    assert seven["slug"] == "a\\bc\rd"  # NUL dropped, the rest as it is
    assert (seven["referer"], seven["referer_host"]) == ("https://r.example/\t", "r.example")
    assert seven["occurred_at"] == NOW
    assert orphans["efefefefefefefef000000000000000a"]["slug"] == "x"
    assert batch.link_ids == {7, 8, 9}


def test_a_visitor_counts_once_a_link_and_hour_and_each_hour_apart(maker):
    hour = 3_600_000
    batch = maker.make(
        [entry([click(), click(), click(ip="198.51.100.7"), click(ts=TS - hour), click(ua=BOT)])],
        now=NOW,
    )
    visitors = {}
    for line in batch.visitor_rows.decode().splitlines():
        link, row_hour, bot, hashes = line.split("\t")
        visitors[int(row_hour) - TS // hour, bot] = hashes.strip("{}").split(",")
    assert {key: len(hashes) for key, hashes in visitors.items()} == {(0, "f"): 2, (-1, "f"): 1, (0, "t"): 1}
    assert visitors[-1, "f"][0] in visitors[0, "f"]  # the same visitor, an hour before


@pytest.mark.parametrize(
    "privacy, raw, stored",
    [
        ("anonymise", "203.0.113.77", "203.0.113.0"),
        ("full", "203.0.113.77", "203.0.113.77"),
        ("anonymise", "2001:DB8:abcd:12::5", "2001:db8:abcd::"),
        ("full", "2001:DB8:abcd:12::5", "2001:db8:abcd:12::5"),
        ("full", "fe80::1%eth0", "fe80::1"),  # inet holds no zone
        ("none", "2001:db8::1", None),
        ("anonymise", "not an address", None),
    ],
)
def test_a_clicks_address_is_in_its_binary_row_as_the_ip_privacy_setting_keeps_it(privacy, raw, stored):
    (row,) = clicks(BatchMaker(Enricher(ip_privacy=privacy)).make([entry([click(ip=raw)])], now=NOW))
    assert row["ip"] == (None if stored is None else ipaddress.ip_address(stored))


def test_another_thread_runs_while_a_batch_is_made(maker):
    """The loop in C holds the GIL; it hands it on between entries, so that
    the importer's store thread, back from PostgreSQL, does not wait for a
    whole batch to be made (importer.py)."""
    entries = [entry([click(ip=f"203.0.113.{i % 200}", link=i % 50 + 1) for i in range(100)]) for _ in range(50)] * 60
    maker.make(entries, now=NOW)  # every value made and cached: no Python runs in the loop now
    wakes, making = [], threading.Event()

    def sleeper():
        making.wait()
        while making.is_set():
            time.sleep(0.001)
            wakes.append(time.perf_counter())

    thread = threading.Thread(target=sleeper)
    thread.start()
    making.set()
    started = time.perf_counter()
    batch = maker.make(entries, now=NOW)
    took = time.perf_counter() - started
    making.clear()
    thread.join()
    assert batch.clicks == 300_000
    during = [t for t in wakes if started < t < started + took]
    # A thread that waits for the GIL gets it within 5 ms (sys.getswitchinterval)
    # where bytecode runs; the loop before let the sleeper run not once.
    assert len(during) >= took / sys.getswitchinterval() / 8, (len(during), took)

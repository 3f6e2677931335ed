"""The click stream as the importer reads it (clicks/stream.py), against the
tests' real Redis: the consumer group, own pending entries first, claims of
entries another consumer left idle, dead letters, and acknowledgement that
trims the stream."""

import time

import pytest

from clicks.stream import ClickStream, import_lag
from slingshot.contract import CLICKS_GROUP, CLICKS_STREAM, DEAD_LETTER_STREAM
from slingshot.redis import get_redis
from testing.streams import add_entry

pytestmark = pytest.mark.usefixtures("empty_streams")


def stream(consumer: str, **options) -> ClickStream:
    made = ClickStream(get_redis(), consumer=consumer, **options)
    made.ensure_group()
    return made


def clicks(n: int = 1) -> list[dict]:
    return [{"ts": int(time.time() * 1000), "slug": "s", "link": 1} for _ in range(n)]


def test_the_group_is_made_once_and_entries_go_to_one_consumer_each():
    first, second = stream("one"), stream("two")
    first.ensure_group()  # again: nothing happens
    ids = [add_entry(clicks()) for _ in range(3)]
    taken = [entry_id for entry_id, _ in first.read(">", None)]
    assert taken == ids
    assert second.read(">", None) == []


def test_a_consumer_reads_its_own_pending_entries_first_after_a_restart():
    reader = stream("restarting")
    ids = [add_entry(clicks()) for _ in range(2)]
    assert [entry_id for entry_id, _ in reader.read(">", None)] == ids
    again = stream("restarting")  # the same name, as after a crash
    assert [entry_id for entry_id, _ in again.read("0", None)] == ids


def test_entries_left_idle_by_another_consumer_are_claimed():
    gone = stream("gone")
    ids = [add_entry(clicks()) for _ in range(2)]
    gone.read(">", None)
    claimer = stream("claimer", claim_idle_ms=50)
    assert claimer.claim()[1] == []  # not idle long enough yet
    time.sleep(0.1)
    cursor, claimed = claimer.claim()
    assert cursor == "0-0" and [entry_id for entry_id, _ in claimed] == ids


def test_acknowledged_entries_leave_the_stream_and_dead_letters_keep_the_reason():
    reader = stream("acker")
    keep, bad = add_entry(clicks()), add_entry(clicks())
    entries = dict(reader.read(">", None))
    reader.dead_letter([(bad, entries[bad], "broken on purpose")])
    reader.acknowledge([keep, bad])
    client = get_redis()
    assert client.xlen(CLICKS_STREAM) == 0  # the backlog is the stream's length
    (dead_id, dead), *_ = client.xrange(DEAD_LETTER_STREAM)
    assert dead[b"entry_id"] == bad and dead[b"reason"] == b"broken on purpose"
    assert dead[b"clicks"] == entries[bad][b"clicks"]
    assert client.xpending(CLICKS_STREAM, CLICKS_GROUP)["pending"] == 0


def test_the_lag_counts_what_waits_and_who_holds_it():
    reader = stream("lagging")
    for _ in range(3):
        add_entry(clicks())
    reader.read(">", None)
    add_entry(clicks())
    lag = import_lag(client=get_redis())
    assert (lag.backlog, lag.pending, lag.consumers["lagging"]) == (4, 3, 3)
    assert lag.oldest_age_seconds >= 0


def test_a_consumer_leaves_the_group_only_without_pending_entries():
    reader = stream("leaver")
    entry_id = add_entry(clicks())
    reader.read(">", None)
    assert not reader.leave()
    reader.acknowledge([entry_id])
    assert reader.leave()

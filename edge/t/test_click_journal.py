"""The click journal (edge/slingshot/journal.lua) through the faults it is
for, under traffic: a worker killed, Redis hung and then killed for longer
than a worker's ring in memory takes to fill, nginx reloaded meanwhile, and a command of
the accounting's pipeline refused. Each ends with every click served in
the stream once, and the edge's served counts equal to it."""

import contextlib
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest
from edge_helpers import (
    following,
    metrics,
    publish,
    serving,
    stream_clicks,
    wait_for_notifications,
    wait_until,
    workers,
)

from clicks.accounting import served_counts
from loadtest.scenarios.visitors import Visitors
from slingshot.contract import SERVED_KEY_PREFIX


def on_every_worker(edge, start) -> Visitors:
    """Visitors from `start()` once their connections reach every worker
    (edge_helpers.serving): kept alive, connections that land on one worker
    stay there (about one start in twelve), so the others would serve none
    of them. What the visitors started before got counts as theirs."""
    served, failures = Counter(), []
    for _ in range(10):
        visitors = start()
        try:
            wait_until(lambda: len(serving(edge)) == len(workers(edge)), timeout=2, what="every worker serving")
        except AssertionError:  # edge_helpers.wait_until's time out
            visitors.stop()
            served.update(visitors.served)
            failures += visitors.failures
            continue
        with visitors.lock:
            visitors.served.update(served)
            visitors.failures[:0] = failures
        return visitors
    raise AssertionError("the visitors' connections never reached every worker")


def served_by(client, prefixes: set[str]) -> int:
    """What the journals of these click id prefixes counted as served, in every hour."""
    total = 0
    for key in client.scan_iter(SERVED_KEY_PREFIX + "*"):
        fields = {field: n for field, n in client.hgetall(key).items() if field.split(b":")[0].decode() in prefixes}
        total += sum(served_counts(fields))
    return total


def settled(client, slug: str, edge, *, at_least: int, timeout: float = 60) -> tuple[list[dict], int]:
    """Waits until the stream holds `at_least` clicks on `slug` and the edge
    has nothing left to send; returns them and what their journals counted."""

    def done():
        found = stream_clicks(client, slug)
        ids = {click["id"] for click in found}
        values = metrics(edge)
        if len(ids) < at_least or values["slingshot_edge_click_buffer_depth"] != 0:
            return None
        return found, served_by(client, {click_id[:16] for click_id in ids})

    deadline = time.monotonic() + timeout
    while not (result := done()) or result[1] != len({click["id"] for click in result[0]}):
        assert time.monotonic() < deadline, f"not settled: {result and (len(result[0]), result[1])}"
        time.sleep(0.2)
    return result


@pytest.fixture
def click_memory():
    """A click memory folder of the test's own on the tmpfs (EDGE_CLICK_MEMORY_DIR)."""
    path = Path(tempfile.mkdtemp(prefix="slingshot-test-clicks-", dir="/dev/shm"))
    path.chmod(0o755)  # for nginx's workers, to a folder of theirs in it
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_a_worker_killed_under_traffic_leaves_its_clicks_to_a_sibling(make_edge, rds, click_memory):
    # A flush interval far longer than the test: the killed worker's clicks
    # are in its ring alone, and only a takeover can send them.
    memory = click_memory / "rings"
    edge = make_edge(workers=2, env={"EDGE_CLICK_FLUSH_INTERVAL": "5", "EDGE_CLICK_MEMORY_DIR": str(memory)})
    slug = "wk" + uuid.uuid4().hex[:8]
    publish(rds, slug)
    visitors = Visitors(edge.port, slug, threads=4, rate=800).start()
    try:
        wait_until(lambda: visitors.served[slug] > 400, timeout=10, what="traffic")
        rings = {path.name for path in memory.iterdir()}
        assert len(rings) == 2 and not list((edge.prefix / "spool").glob("*.ring"))
        # A worker with clicks in its journal: one that serves visitors.
        victim = serving(edge)[0]
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: victim not in workers(edge) and len(workers(edge)) == 2, what="a new worker")
        # The dead worker's ring copied into its journal and deleted; the new worker's made.
        wait_until(lambda: len({path.name for path in memory.iterdir()} - rings) == 1, what="the new worker's ring")
        wait_until(
            lambda: len(rings & {path.name for path in memory.iterdir()}) == 1, what="the dead worker's ring gone"
        )
    finally:
        visitors.stop()
    served, failed = visitors.served[slug], len(visitors.failures)
    found, counted = settled(rds, slug, edge, at_least=served)
    ids = {click["id"] for click in found}
    # A request whose click was written but whose answer died with the worker
    # is a failed visit for the visitor, and a click for the edge.
    assert served <= len(ids) <= served + failed, (served, failed, len(ids))
    assert counted == len(ids)
    assert "took over the click journal" in edge.log_path.read_text()


def test_an_error_on_one_command_keeps_the_counts_for_the_next_flush(make_edge, private_redis):
    edge = make_edge(workers=1, env=private_redis.edge_env())
    client = private_redis.client()
    slug = "ce" + uuid.uuid4().hex[:8]
    publish(client, slug)
    hour = int(time.time()) // 3600 * 3600
    keys = [f"{SERVED_KEY_PREFIX}{hour + n * 3600}" for n in range(2)]
    for key in keys:
        client.set(key, "not a hash")  # HSET on it answers WRONGTYPE; the pipeline's XADDs do not fail
    for _ in range(5):
        assert edge.request(f"/{slug}").status == 302
    wait_until(lambda: len(stream_clicks(client, slug)) == 5, what="the clicks")
    wait_until(lambda: "accounting: redis: WRONGTYPE" in edge.log_path.read_text(), what="the refusal logged")
    client.delete(*keys)
    prefixes = {click["id"][:16] for click in stream_clicks(client, slug)}
    wait_until(lambda: served_by(client, prefixes) == 5, what="the counts sent again, whole")
    # The refused counts sent no entry again.
    assert len(stream_clicks(client, slug)) == 5


class Outage(NamedTuple):
    """What the edge did while Redis was away."""

    seconds: float
    peak: float  # the spool's bytes at their most
    during: dict  # the edge's metrics once the reload's old workers were gone


def large_clicks_on_every_worker(edge, slug: str) -> Visitors:
    """Visitors on every worker whose clicks are about 1.6 KB each: about 650 fill a worker's memory."""
    headers = {"User-Agent": "agent/" + "u" * 500, "Referer": "https://r.example/" + "r" * 1000}
    # Each worker serves some: the one not killed has the link cached, and goes on spooling.
    # A connection nginx closes (after 1,000 requests) may come back on the
    # worker started after the kill, which has no link cached: left at once.
    return on_every_worker(
        edge, lambda: Visitors(edge.port, slug, threads=4, rate=3000, headers=headers, leave_failing=True).start()
    )


def hang_kill_and_reload(edge, private_redis, visitors: Visitors, slug: str) -> Outage:
    """Redis hung until 3 MiB are spooled, a worker killed, then 5 MiB; Redis
    then killed and nginx reloaded; Redis started again."""
    peak = 0.0
    wait_until(lambda: visitors.served[slug] > 300, timeout=10, what="traffic")
    private_redis.stack.redis.send_signal(signal.SIGSTOP)  # hung: connects, never answers
    hung_at = time.monotonic()

    def spooled(bytes_: float) -> bool:
        nonlocal peak
        peak = max(peak, metrics(edge)["slingshot_edge_click_spool_bytes"])
        return peak > bytes_

    wait_until(lambda: spooled(3 * 2**20), timeout=60, what="3 MiB spooled")
    os.kill(serving(edge)[0], signal.SIGKILL)
    try:
        wait_until(lambda: spooled(5 * 2**20), timeout=60, what="5 MiB spooled")  # by the other worker
    except AssertionError as error:
        failures = Counter(what for _, what in visitors.failures)
        raise AssertionError(
            f"{error}: peak {peak / 2**20:.1f} MiB; served {visitors.served[slug]}, failed {dict(failures)}; "
            f"workers {workers(edge)}, serving {serving(edge)}; the edge's log ends:\n"
            + edge.log_path.read_text()[-3000:]
        ) from None
    private_redis.stack.redis.send_signal(signal.SIGCONT)
    private_redis.stop()  # now down: refused
    old = set(workers(edge))
    edge.reload()
    wait_until(lambda: not old & set(workers(edge)), timeout=30, what="the old workers gone")
    during = metrics(edge)
    outage = time.monotonic() - hung_at
    private_redis.start()
    return Outage(outage, peak, during)


def assert_in_order_journal_by_journal(found: list[dict]) -> None:
    """The clicks in the order they were made, journal by journal, from at least two journals."""
    by_journal: dict[str, list[int]] = {}
    for click in found:
        by_journal.setdefault(click["id"][:16], []).append(int(click["id"][16:], 16))
    for numbers in by_journal.values():
        assert sorted(set(numbers)) == list(range(1, max(numbers) + 1))
    assert len(by_journal) >= 2


def assert_the_spool_left_as_two_serving_workers_need_it(edge, click_memory: Path) -> None:
    """Nothing spooled or dropped, and the journals and rings of the two workers serving now alone."""
    # A journal a reload's old worker left, all sent, counts until a serving
    # worker's scan (each second) takes it over and lets it go.
    wait_until(
        lambda: metrics(edge)["slingshot_edge_click_journals"] == 2,
        timeout=10,
        what="the serving workers' two journals",
    )
    final = metrics(edge)
    assert final["slingshot_edge_click_spool_bytes"] == 0 and final["slingshot_edge_clicks_dropped_total"] == 0
    assert final["slingshot_edge_click_journals"] == 2
    # The rings of the two workers serving now, and no other: the killed
    # worker's was taken over, and the reload's old workers left their
    # journals in their files alone.
    assert len(list(click_memory.iterdir())) == 2
    # Timers fired every 0.1 s while each flush waited on Redis: none ran into another.
    log = edge.log_path.read_text()
    assert "click flush: " not in log and "attempt to" not in log


def test_a_redis_outage_under_load_spools_to_disk_through_a_reload_and_a_kill(make_edge, private_redis, click_memory):
    """Redis hung, then killed, under load, for longer than the memory each
    worker writes its clicks into (1 MB here) takes to fill; a worker
    killed and nginx reloaded meanwhile. Every click arrives once Redis is
    back. (Workers started during the outage have no link cached: they
    answer 503, and those are no clicks.)"""
    edge = make_edge(
        workers=2,
        env={
            **private_redis.edge_env(),
            "EDGE_CLICK_RETRY_MAX": "0.5",
            "EDGE_CLICK_MEMORY_MB": "1",
            "EDGE_CLICK_MEMORY_DIR": str(click_memory),
        },
    )
    client = private_redis.client()
    slug = "ou" + uuid.uuid4().hex[:8]
    seen = following(edge, client)
    publish(client, slug)
    wait_for_notifications(edge, seen + 2)
    assert edge.request(f"/{slug}").status == 302
    visitors = large_clicks_on_every_worker(edge, slug)
    try:
        outage = hang_kill_and_reload(edge, private_redis, visitors, slug)
    finally:
        visitors.stop()
    served, failed = visitors.served[slug], len(visitors.failures)
    back = time.monotonic()
    found, counted = settled(private_redis.client(), slug, edge, at_least=served, timeout=120)
    drained = time.monotonic() - back
    ids = {click["id"] for click in found}
    print(
        f"\noutage {outage.seconds:.1f}s, {served} redirects served ({failed} failed visits), spool peak "
        f"{outage.peak / 2**20:.1f} MiB, {outage.during['slingshot_edge_click_buffer_depth']:.0f} clicks waiting; "
        f"all in the stream {drained:.1f}s after Redis came back"
    )
    assert served <= len(ids) <= served + failed, (served, failed, len(ids))
    assert counted == len(ids)
    assert_in_order_journal_by_journal(found)
    assert_the_spool_left_as_two_serving_workers_need_it(edge, click_memory)


def test_journals_make_way_for_new_ones_under_steady_traffic(make_edge, rds, click_memory):
    """A journal past half its bound (here 100 KB) is replaced while clicks
    keep coming: none is dropped, each new journal is written into the
    file and ring of one all sent (its spare), and the spool keeps no more
    than the journal being written, the one being finished and the spare."""
    edge = make_edge(workers=1, env={"EDGE_CLICK_SPOOL_MAX_MB": "0.2", "EDGE_CLICK_MEMORY_DIR": str(click_memory)})
    spool = edge.prefix / "spool"
    slug = "jr" + uuid.uuid4().hex[:8]
    publish(rds, slug)
    files = {}  # each journal's file, by its name
    rings = set()  # the rings' names

    def note_files() -> None:
        for path in spool.glob("*.journal"):
            with contextlib.suppress(FileNotFoundError):  # made a spare meanwhile
                files[path.name] = path.stat().st_ino
        rings.update(path.name for path in click_memory.iterdir())
        assert len(list(spool.iterdir())) <= 3, sorted(path.name for path in spool.iterdir())

    visitors = Visitors(edge.port, slug, threads=3, rate=1500, headers={"User-Agent": "u" * 500}).start()
    try:
        # About 560 bytes a click: a journal every 180 or so.
        wait_until(lambda: note_files() or visitors.served[slug] > 2000, timeout=30, what="traffic")
    finally:
        visitors.stop()
    found, counted = settled(rds, slug, edge, at_least=visitors.served[slug])
    ids = {click["id"] for click in found}
    assert len(ids) == visitors.served[slug] == counted
    assert len({click_id[:16] for click_id in ids}) >= 8
    final = metrics(edge)
    assert final["slingshot_edge_clicks_dropped_total"] == 0
    # Two files take turns, and a third now and then when a journal makes
    # way before the one before it is all sent.
    assert len(files) >= 6 and len(set(files.values())) <= len(files) / 2, files
    wait_until(
        lambda: sorted(path.suffix for path in spool.iterdir()) == [".journal", ".spare"],
        what="one journal and one spare left in the spool",
    )
    # The spare keeps its ring for the next journal: two rings, taking turns too.
    assert len(list(click_memory.iterdir())) == 2
    assert len(rings) <= len(set(files.values())), (rings, files)

    # The worker's successor takes its spare (and deletes its ring), and
    # removes the file of the journal it takes over once that is sent:
    # still one of each, and one ring.
    (spare,) = spool.glob("*.spare")
    (journal,) = spool.glob("*.journal")
    (worker,) = workers(edge)
    os.kill(worker, signal.SIGKILL)
    wait_until(lambda: len(workers(edge)) == 1 and worker not in workers(edge), what="a new worker")
    wait_until(
        lambda: not journal.exists() and len(list(spool.glob("*.journal"))) == 1,
        what="the dead worker's journal sent",
        timeout=10,
    )
    assert sorted(path.name for path in spool.glob("*.spare")) == [spare.name]
    assert len(list(click_memory.iterdir())) == 1
    assert metrics(edge)["slingshot_edge_clicks_dropped_total"] == 0


def test_a_worker_that_cannot_make_its_journal_tries_again_and_then_records(make_edge, private_redis):
    """A worker started while its journal cannot be made (here the spool
    refuses it a file) drops its clicks, counted as dropped and as served,
    until it can; then it makes one and records every click, without a
    restart. The accounting shows the loss."""
    edge = make_edge(workers=1, env=private_redis.edge_env())
    rds = private_redis.client()
    slug = "jm" + uuid.uuid4().hex[:8]
    publish(rds, slug)
    spool = edge.prefix / "spool"
    [worker] = workers(edge)
    journals = set(spool.glob("*.journal"))
    spool.chmod(0o500)
    try:
        os.kill(worker, signal.SIGKILL)
        wait_until(lambda: len(set(workers(edge)) - {worker}) == 1, what="a new worker")
        wait_until(
            lambda: "clicks will be dropped until a click journal can be made" in edge.log_path.read_text(),
            what="the refusal logged",
        )
        before = metrics(edge)["slingshot_edge_clicks_dropped_total"]
        for _ in range(3):
            assert edge.request(f"/{slug}").status == 302
        assert metrics(edge)["slingshot_edge_clicks_dropped_total"] == before + 3
    finally:
        spool.chmod(0o700)
    wait_until(lambda: set(spool.glob("*.journal")) - journals, what="the new worker's journal")
    for _ in range(5):
        assert edge.request(f"/{slug}").status == 302
    found, counted = settled(rds, slug, edge, at_least=5)
    assert len({click["id"] for click in found}) == counted == 5
    assert metrics(edge)["slingshot_edge_clicks_dropped_total"] == before + 3
    # Every journal's counts and the lost clicks': served 8, of which 5 stored.
    served = sum(sum(served_counts(rds.hgetall(key))) for key in rds.scan_iter(SERVED_KEY_PREFIX + "*"))
    assert served == 8


def test_a_worker_without_click_memory_writes_its_ring_in_the_spool_and_says_why(make_edge, rds, click_memory):
    """Where the click memory folder cannot hold a worker's ring (here a
    file stands where the folder would be), the worker writes its ring in
    the spool folder: every click recorded, and the log says why."""
    blocked = click_memory / "not-a-folder"
    blocked.write_text("")
    edge = make_edge(workers=1, env={"EDGE_CLICK_MEMORY_DIR": str(blocked)})
    slug = "jn" + uuid.uuid4().hex[:8]
    publish(rds, slug)
    for _ in range(20):
        assert edge.request(f"/{slug}").status == 302
    found, counted = settled(rds, slug, edge, at_least=20)
    assert len({click["id"] for click in found}) == 20 == counted
    assert len(list((edge.prefix / "spool").glob("*.ring"))) == 1
    assert "click journals write through the spool folder, not memory" in edge.log_path.read_text()

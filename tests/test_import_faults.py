"""Faults during an import, against real Redis and PostgreSQL: the importer
runs as its own process (`manage.py import_clicks`), something breaks, and
in the end every click produced is stored exactly once and counted once in
the rollups."""

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest
import redis
from django.core.management import CommandError, call_command
from django.db import connection

from clicks.importer import lock_key
from clicks.rollups import fold_days
from devstack.net import free_port, wait_for_port
from devstack.redis import redis_command
from links.domains import default_domain
from links.models import Link
from slingshot.contract import CLICKS_GROUP as GROUP
from slingshot.contract import CLICKS_STREAM as STREAM
from slingshot.contract import DEAD_LETTER_STREAM
from slingshot.redis import get_redis
from testing.factories import make_user
from testing.streams import entry_fields

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams")]

REPO = Path(__file__).resolve().parent.parent
CLICKS_PER_ENTRY = 100


@pytest.fixture
def links() -> list[Link]:
    owner = make_user()
    made = [f"f{uuid.uuid4().hex[:10]}" for _ in range(5)]
    domain = default_domain()
    return Link.objects.bulk_create(
        Link(domain=domain, slug=slug, url=f"https://example.com/{slug}", owner=owner, team=owner.personal_team)
        for slug in made
    )


def produce(client: redis.Redis, links: list[Link], *, entries: int) -> set[str]:
    """XADDs entries as the edge writes them; returns the click ids."""
    prefix = uuid.uuid4().hex[:16]
    now_ms = int(time.time() * 1000)
    ids = set()
    pipe = client.pipeline(transaction=False)
    for entry in range(entries):
        clicks = []
        for n in range(CLICKS_PER_ENTRY):
            link = links[n % len(links)]
            clicks.append(
                {
                    "ts": now_ms - n * 1000,
                    "slug": link.slug,
                    "link": link.pk,
                    "ip": f"198.51.100.{n % 200}",
                    "ua": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Firefox/128.0"
                    if n % 10
                    else "Googlebot/2.1 (+http://www.google.com/bot.html)",
                    "ref": "https://news.example/" if n % 3 else "",
                }
            )
        pipe.xadd(STREAM, entry_fields(clicks, prefix=prefix, first=entry * CLICKS_PER_ENTRY))
        ids.update(click["id"] for click in clicks)
    pipe.execute()
    return ids


def database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def spawn_importer(tmp_path: Path, *args: str, name: str, env: dict | None = None) -> subprocess.Popen:
    environment = {**os.environ, "DATABASE_URL": database_url(), "CLICK_IMPORT_LOG_INTERVAL": "0.2", **(env or {})}
    out = open(tmp_path / f"{name}.log", "wb")
    return subprocess.Popen(
        [sys.executable, str(REPO / "dashboard" / "manage.py"), "import_clicks", *args],
        env=environment,
        stdout=out,
        stderr=subprocess.STDOUT,
    )


def stored_ids(ids: set[str]) -> tuple[int, int]:
    """(rows, distinct click ids) of these clicks in PostgreSQL."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(DISTINCT click_id) FROM clicks WHERE click_id = ANY(%s::uuid[])", [list(ids)]
        )
        return cursor.fetchone()


def stored_count(links: list[Link]) -> int:
    """Clicks of these links in PostgreSQL."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM clicks WHERE link_id = ANY(%s)", [[link.pk for link in links]])
        return cursor.fetchone()[0]


def rolled_up(links: list[Link]) -> tuple[int, int, int]:
    """Clicks of these links in the hourly rollups, the daily ones and the totals."""
    ids = [link.pk for link in links]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(sum(clicks), 0) FROM click_rollup_hour WHERE link_id = ANY(%s)),"
            "       (SELECT coalesce(sum(clicks), 0) FROM click_rollup_day WHERE link_id = ANY(%s)),"
            "       (SELECT coalesce(sum(clicks), 0) FROM link_click_totals WHERE link_id = ANY(%s))",
            [ids, ids, ids],
        )
        return tuple(int(n) for n in cursor.fetchone())


def wait_until(condition, *, timeout: float = 30.0, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def assert_exactly_once(ids: set[str], links: list[Link]) -> None:
    """Stored once, and counted once in the hour rollups and the totals; then,
    the recent hours folded into the day rollups (twice, which must change
    nothing), counted once there too."""
    assert stored_ids(ids) == (len(ids), len(ids))
    assert rolled_up(links)[::2] == (len(ids), len(ids))
    for _ in range(2):
        fold_days(until=datetime.now(timezone.utc) + timedelta(hours=1))
        assert rolled_up(links) == (len(ids), len(ids), len(ids))


def drained_without_exiting(importer: subprocess.Popen, client: redis.Redis, tmp_path: Path) -> str:
    """Waits until the importer has emptied the stream, checks that the
    fault did not make it exit, stops it, and returns its log."""
    wait_until(lambda: client.xlen(STREAM) == 0, timeout=90, what="the stream to be emptied")
    assert importer.poll() is None, "the importer must not exit on a transient fault"
    assert stop(importer) == 0
    return (tmp_path / "importer.log").read_text()


def stop(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=30)


def test_importer_killed_mid_batch_then_restarted(tmp_path, links):
    client = get_redis()
    ids = produce(client, links, entries=300)
    importer = spawn_importer(tmp_path, "--once", "--consumer", "kill9", "--batch-size", "5", name="kill9")
    wait_until(lambda: stored_ids(ids)[0] > 0, what="the first batch")
    importer.send_signal(signal.SIGKILL)
    importer.wait(timeout=10)

    # It died holding a batch it had read and not acknowledged.
    assert client.xpending(STREAM, GROUP)["pending"] > 0
    assert stored_ids(ids)[0] < len(ids)

    call_command("import_clicks", "--once", "--consumer", "kill9")

    assert_exactly_once(ids, links)
    assert client.xlen(STREAM) == 0 and client.xpending(STREAM, GROUP)["pending"] == 0


@pytest.mark.slow
def test_two_importers_share_the_stream(tmp_path, links):
    client = get_redis()
    first = spawn_importer(tmp_path, "--consumer", "pair-a", "--batch-size", "5", "--block-ms", "100", name="a")
    second = spawn_importer(tmp_path, "--consumer", "pair-b", "--batch-size", "5", "--block-ms", "100", name="b")
    wait_until(
        lambda: len(client.xinfo_consumers(STREAM, GROUP)) >= 2 if client.exists(STREAM) else False,
        what="both consumers to join the group",
    )

    ids = produce(client, links, entries=300)
    wait_until(lambda: stored_ids(ids)[0] == len(ids), what="every click")
    assert stop(first) == 0 and stop(second) == 0

    assert_exactly_once(ids, links)
    for name in ("a", "b"):
        log = (tmp_path / f"{name}.log").read_text()
        done = sum(int(n) for n in re.findall(r"entries, (\d+) clicks \(", log))
        assert done > 0, f"importer {name} imported nothing:\n{log}"


def test_a_second_importer_with_the_same_consumer_name_exits():
    with psycopg.connect(**connection.get_connection_params()) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [lock_key("twin")])
        with pytest.raises(CommandError, match="another import_clicks runs with consumer name 'twin'") as raised:
            call_command("import_clicks", "--once", "--consumer", "twin")
    assert raised.value.returncode == 3


@pytest.mark.parametrize("snapshot", ["with the group", "before the group"])
def test_redis_killed_mid_import_forgets_acknowledgements_and_every_click_is_stored_once(tmp_path, links, snapshot):
    """Redis dies with SIGKILL and comes back with an older state of the
    stream (its last snapshot): acknowledged, even deleted, entries are there
    again and the consumer group is as it was then, or missing."""
    port = free_port()
    command = redis_command(tmp_path / "redis", port, durable=False)  # snapshots only when asked
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    client = redis.Redis(port=port)
    importer = None
    try:
        wait_for_port(port, process=server)
        ids = produce(client, links, entries=600)
        if snapshot == "with the group":
            client.xgroup_create(STREAM, GROUP, id="0")
        client.save()
        importer = spawn_importer(
            tmp_path,
            "--consumer",
            "redis-kill",
            "--batch-size",
            "5",
            "--block-ms",
            "100",
            # Reading as soon as a batch is stored, the importer is at Redis
            # when it dies, not lingering between reads.
            "--linger-ms",
            "0",
            name="importer",
            env={"REDIS_PORT": str(port), "REDIS_PASSWORD": ""},
        )
        wait_until(lambda: client.xlen(STREAM) < 590, what="some batches stored and acknowledged")

        server.kill()
        server.wait(timeout=30)
        at_fault = stored_ids(ids)[0]
        assert 0 < at_fault < len(ids), "the fault must hit while clicks are still to be stored"
        # The importer meets Redis gone, and is then held still until Redis
        # is back and what it came back with is seen: retrying, it could
        # otherwise take entries first.
        wait_until(lambda: "retrying" in (tmp_path / "importer.log").read_text(), what="the importer to retry")
        importer.send_signal(signal.SIGSTOP)
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for_port(port, process=server)
        assert client.xlen(STREAM) == 600  # every entry back, those imported too
        importer.send_signal(signal.SIGCONT)

        log = drained_without_exiting(importer, client, tmp_path)
        assert_exactly_once(ids, links)
        assert "retrying" in log
        assert "stored already" in log, "the clicks stored before the fault came again and were not counted"
    finally:
        if importer and importer.poll() is None:
            importer.kill()
        server.kill()
        server.wait(timeout=30)


@pytest.mark.slow
def test_postgres_restarted_mid_import(tmp_path, links, servers):
    client = get_redis()
    ids = produce(client, links, entries=600)
    importer = spawn_importer(
        tmp_path, "--consumer", "pg-restart", "--batch-size", "5", "--block-ms", "100", name="importer"
    )
    try:
        wait_until(lambda: stored_ids(ids)[0] > 0, what="the first batch")
        connection.close()
        servers.restart_postgres()
        at_fault = stored_ids(ids)[0]
        assert at_fault < len(ids), "the fault must hit while clicks are still to be stored"

        log = drained_without_exiting(importer, client, tmp_path)
    finally:
        if importer.poll() is None:
            importer.kill()
    assert_exactly_once(ids, links)
    assert "retrying" in log, log


@pytest.mark.slow
def test_the_importers_connection_terminated_again_and_again(tmp_path, links):
    """pg_terminate_backend on the importer's connection, whatever it is doing
    (COPY, the rollups, COMMIT), five times during one import."""
    client = get_redis()
    ids = produce(client, links, entries=1000)
    url = database_url() + "?application_name=importer-under-fire"
    # Small batches, read as soon as the last is stored: more transactions,
    # so the import outlasts the faults.
    importer = spawn_importer(
        tmp_path,
        "--consumer",
        "under-fire",
        "--batch-size",
        "1",
        "--block-ms",
        "100",
        "--linger-ms",
        "0",
        name="importer",
        env={"DATABASE_URL": url},
    )
    try:
        terminated = []
        for _ in range(5):
            # Counted by the test's own links (an index), not by the ids: a
            # look-up of every id takes long once earlier tests filled clicks,
            # and the import would end before the fifth fault.
            before = stored_count(links)
            wait_until(lambda before=before: stored_count(links) > before, what="the import to go on")
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = 'importer-under-fire'"
                )
                assert cursor.fetchone()[0] == 1
            terminated.append(stored_count(links))
        assert max(terminated) < len(ids), "every termination must hit while clicks are still to be stored"

        log = drained_without_exiting(importer, client, tmp_path)
    finally:
        if importer.poll() is None:
            importer.kill()
    assert_exactly_once(ids, links)
    assert log.count("retrying in") >= 5, log


def test_a_poisoned_entry_is_dead_lettered_and_the_rest_imported(tmp_path, links):
    client = get_redis()
    ids = produce(client, links, entries=3)
    client.xadd(STREAM, {"v": "3", "clicks": b"not-hex\n1\nx\n\n1.000\n::1\n\n\n"})
    ids |= produce(client, links, entries=3)

    importer = spawn_importer(tmp_path, "--once", "--consumer", "poison", name="importer")
    assert importer.wait(timeout=60) == 0

    assert_exactly_once(ids, links)
    dead = client.xrange(DEAD_LETTER_STREAM)
    assert [fields[b"reason"] for _, fields in dead] == [b"click id prefix or first number is not lower-case hex"]
    assert client.xlen(STREAM) == 0

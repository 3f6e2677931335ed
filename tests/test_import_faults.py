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
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection

import devstack
from clicks.importer import lock_key
from clicks.rollups import fold_days
from clicks.tests.streams import empty_streams, entry_fields  # noqa: F401 (autouse fixture)
from links.models import Link
from links.redis import get_redis
from slingshot.contract import CLICKS_GROUP as GROUP, CLICKS_STREAM as STREAM, DEAD_LETTER_STREAM

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parent.parent
CLICKS_PER_ENTRY = 100


@pytest.fixture
def links() -> list[Link]:
    owner = get_user_model().objects.create_user("fault-" + uuid.uuid4().hex[:8])
    made = [f"f{uuid.uuid4().hex[:10]}" for _ in range(5)]
    return Link.objects.bulk_create(Link(slug=slug, url=f"https://example.com/{slug}", owner=owner) for slug in made)


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
            clicks.append({"ts": now_ms - n * 1000, "slug": link.slug, "link": link.pk,
                           "ip": f"198.51.100.{n % 200}", "ua": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Firefox/128.0"
                           if n % 10 else "Googlebot/2.1 (+http://www.google.com/bot.html)",
                           "ref": "https://news.example/" if n % 3 else ""})
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
        env=environment, stdout=out, stderr=subprocess.STDOUT,
    )


def stored_ids(ids: set[str]) -> tuple[int, int]:
    """(rows, distinct click ids) of these clicks in PostgreSQL."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(DISTINCT click_id) FROM clicks WHERE click_id = ANY(%s::uuid[])",
                       [list(ids)])
        return cursor.fetchone()


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


def test_two_importers_share_the_stream(tmp_path, links):
    client = get_redis()
    first = spawn_importer(tmp_path, "--consumer", "pair-a", "--batch-size", "5", "--block-ms", "100", name="a")
    second = spawn_importer(tmp_path, "--consumer", "pair-b", "--batch-size", "5", "--block-ms", "100", name="b")
    wait_until(lambda: len(client.xinfo_consumers(STREAM, GROUP)) >= 2 if client.exists(STREAM) else False,
               what="both consumers to join the group")

    ids = produce(client, links, entries=300)
    wait_until(lambda: stored_ids(ids)[0] == len(ids), what="every click")
    time.sleep(0.5)  # a last progress line from each
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


def test_redis_restarted_mid_import(tmp_path, links):
    port = devstack.free_port()
    command = devstack.redis_command(tmp_path / "redis", port, durable=True)
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    client = redis.Redis(port=port)
    importer = None
    try:
        devstack.wait_for_port(port, process=server)
        ids = produce(client, links, entries=300)
        importer = spawn_importer(tmp_path, "--consumer", "redis-restart", "--batch-size", "5", "--block-ms", "100",
                                  name="importer", env={"REDIS_PORT": str(port), "REDIS_PASSWORD": ""})
        wait_until(lambda: stored_ids(ids)[0] > 0, what="the first batch")

        server.terminate()  # SIGTERM: Redis writes its append-only file and exits
        server.wait(timeout=30)
        time.sleep(0.5)
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        devstack.wait_for_port(port, process=server)

        wait_until(lambda: stored_ids(ids)[0] == len(ids), what="every click after the restart")
        wait_until(lambda: client.xlen(STREAM) == 0, what="the stream to be emptied")
        assert stop(importer) == 0
        assert_exactly_once(ids, links)
        assert "retrying" in (tmp_path / "importer.log").read_text()
    finally:
        if importer and importer.poll() is None:
            importer.kill()
        server.terminate()
        server.wait(timeout=30)


def test_postgres_restarted_mid_import(tmp_path, links, servers):
    client = get_redis()
    ids = produce(client, links, entries=300)
    importer = spawn_importer(tmp_path, "--consumer", "pg-restart", "--batch-size", "5", "--block-ms", "100",
                              name="importer")
    try:
        wait_until(lambda: stored_ids(ids)[0] > 0, what="the first batch")
        connection.close()
        servers.restart_postgres()

        wait_until(lambda: client.xlen(STREAM) == 0, what="the stream to be emptied")
        assert stop(importer) == 0
    finally:
        if importer.poll() is None:
            importer.kill()
    assert_exactly_once(ids, links)
    log = (tmp_path / "importer.log").read_text()
    assert "OperationalError" in log or "InterfaceError" in log, log


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

"""The importer's and the publisher's metrics, scraped from the real
processes (`manage.py import_clicks` / `run_publisher --metrics-port`),
while they work and while Redis is gone."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest
import redis
from django.core.management import CommandError, call_command
from prometheus_client.parser import text_string_to_metric_families

import devstack
from devstack.net import free_port, wait_for_port
from devstack.throwaway import ThrowawayStack
from links.domains import default_domain
from links.models import LinkOutbox
from slingshot.contract import CLICKS_STREAM, DEAD_LETTER_STREAM
from slingshot.redis import get_redis
from testing.factories import make_link
from tests.test_import_faults import database_url, links, produce, spawn_importer  # noqa: F401 (links: fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams")]

REPO = devstack.REPO


def scrape(port: int) -> dict[str, float]:
    """The metrics as {name: value} (none of these have labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


def wait_for_metrics(port: int, condition, *, timeout: float = 30.0, what: str) -> dict[str, float]:
    deadline = time.monotonic() + timeout
    while True:
        found = scrape(port)
        if condition(found):
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}; last scrape: {found}"
        time.sleep(0.05)


def stop(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=30)


@pytest.fixture
def private_redis():
    stack = ThrowawayStack(prefix="slingshot-redis-")
    stack.start_redis()
    yield stack
    stack.cleanup()


def test_the_importer_counts_what_it_does(tmp_path, links):  # noqa: F811 (links: the fixture)
    port = free_port()
    importer = spawn_importer(
        tmp_path,
        "--consumer",
        "metrics",
        "--batch-size",
        "5",
        "--block-ms",
        "100",
        "--metrics-port",
        str(port),
        name="importer",
    )
    try:
        wait_for_port(port, process=importer)
        idle = scrape(port)
        assert idle["slingshot_importer_redis_up"] == 1 and idle["slingshot_importer_batches_total"] == 0

        client = get_redis()
        ids = produce(client, links, entries=20)
        client.xadd(CLICKS_STREAM, {"v": "3", "clicks": b"not-hex\n1\nx\n\n1.000\n::1\n\n\n"})
        # A scrape may come between a batch's counters: wait for the last of them.
        done = wait_for_metrics(
            port,
            lambda m: (
                m["slingshot_importer_entries_total"] == 21
                and m["slingshot_importer_dead_letters_total"] == 1
                and m["slingshot_importer_clicks_stored_total"] == len(ids)
            ),
            what="every entry to be imported",
        )
        assert done["slingshot_importer_clicks_read_total"] == len(ids)
        assert client.xlen(DEAD_LETTER_STREAM) == 1
        assert done["slingshot_importer_batches_total"] >= 21 / 5
        assert done["slingshot_importer_backlog_entries"] == 0 and done["slingshot_importer_pending_entries"] == 0
        assert done["slingshot_importer_oldest_entry_age_seconds"] == 0
        assert done["slingshot_importer_retries_total"] == 0
        assert stop(importer) == 0
    finally:
        if importer.poll() is None:
            importer.kill()


def test_the_importer_reports_a_backlog_and_redis_going_away(tmp_path, private_redis):
    port = free_port()
    redis_env = {"REDIS_PORT": str(private_redis.redis_port), "REDIS_PASSWORD": private_redis.redis_password}
    client = redis.Redis(port=private_redis.redis_port, password=private_redis.redis_password)
    client.xadd(CLICKS_STREAM, {"v": "3", "clicks": b"queued before the importer joined"})
    importer = spawn_importer(
        tmp_path,
        "--consumer",
        "outage",
        "--block-ms",
        "100",
        name="importer",
        env={**redis_env, "IMPORTER_METRICS_PORT": str(port)},
    )
    try:
        wait_for_port(port, process=importer)
        wait_for_metrics(port, lambda m: m["slingshot_importer_dead_letters_total"] == 1, what="the entry")

        private_redis.stop_redis()
        down = wait_for_metrics(port, lambda m: m["slingshot_importer_retries_total"] >= 1, what="a retry")
        assert down["slingshot_importer_redis_up"] == 0 and "slingshot_importer_backlog_entries" not in down
        scraped_at = time.monotonic()
        scrape(port)
        assert time.monotonic() - scraped_at < 1.0, "a scrape waits on a Redis that is gone"

        private_redis.start_redis()
        back = wait_for_metrics(port, lambda m: m["slingshot_importer_redis_up"] == 1, what="Redis to be back")
        assert back["slingshot_importer_backlog_entries"] == 0
        assert stop(importer) == 0
    finally:
        if importer.poll() is None:
            importer.kill()


def test_a_metrics_port_in_use_is_a_clear_error():
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        with pytest.raises(CommandError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            call_command("import_clicks", "--once", "--consumer", "port-taken", "--metrics-port", str(port))
    with pytest.raises(CommandError, match="between 1 and 65535"):
        call_command("run_publisher", "--metrics-port", "70000")


def test_the_publisher_reports_its_outbox_retries_and_deliveries(tmp_path, private_redis, settings, make_user):
    settings.LINK_PUBLISH_INLINE = False  # the publisher process alone delivers
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "PUBLISHER_METRICS_PORT": str(port),
        "REDIS_PORT": str(private_redis.redis_port),
        "REDIS_PASSWORD": private_redis.redis_password,
    }
    log = open(tmp_path / "publisher.log", "wb")
    publisher = subprocess.Popen(
        [sys.executable, str(REPO / "dashboard" / "manage.py"), "run_publisher"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, process=publisher)
        default_domain()  # the default domain's row, and its own change, before the counting starts
        wait_for_metrics(port, lambda m: m["slingshot_publisher_outbox_depth"] == 0, what="the default domain")
        start = scrape(port)
        assert start["slingshot_publisher_database_up"] == 1 and start["slingshot_publisher_outbox_depth"] == 0

        private_redis.stop_redis()
        owner = make_user()
        slugs = [f"pm{uuid.uuid4().hex[:8]}" for _ in range(3)]
        for slug in slugs:
            make_link(owner=owner, url="https://example.com/metrics", slug=slug)
        waiting = wait_for_metrics(
            port,
            lambda m: m["slingshot_publisher_retries_total"] >= 1 and m["slingshot_publisher_outbox_depth"] == 3,
            what="the publisher to retry",
        )
        published = start["slingshot_publisher_changes_published_total"]
        assert waiting["slingshot_publisher_changes_published_total"] == published

        private_redis.start_redis()
        # The rows leave the outbox as their delivery commits; they are counted once it returns.
        wait_for_metrics(
            port,
            lambda m: (
                m["slingshot_publisher_outbox_depth"] == 0
                and m["slingshot_publisher_changes_published_total"] == published + 3
            ),
            what="the outbox to empty",
        )
        assert LinkOutbox.objects.count() == 0
        assert stop(publisher) == 0
    finally:
        if publisher.poll() is None:
            publisher.kill()

"""The webhook deliverer as its own process (`manage.py deliver_webhooks`)
against real PostgreSQL and a receiver that verifies every delivery with
the Standard Webhooks spec's library: killed with SIGKILL while sending,
and PostgreSQL restarted under it; every message arrives, none is made
twice, and only what was in flight at the kill arrives twice."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from links.fields import LinkFields
from links.services import link_bulk_create
from teams.services import personal_team
from testing.factories import make_user
from webhooks import services
from webhooks.models import Message
from webhooks.tests.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
EVENTS = 400
PER_WEBHOOK = 8


def database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def spawn_deliverer(tmp_path: Path, name: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "WEBHOOKS_ALLOW_HTTP": "true",
        "WEBHOOKS_ALLOW_PRIVATE": "true",
        "WEBHOOKS_LEASE_SECONDS": "3",
        "WEBHOOKS_PER_WEBHOOK": str(PER_WEBHOOK),
    }
    return subprocess.Popen(
        [sys.executable, str(REPO / "dashboard" / "manage.py"), "deliver_webhooks", "--poll", "0.05"],
        env=env,
        stdout=open(tmp_path / f"{name}.log", "wb"),
        stderr=subprocess.STDOUT,
    )


@pytest.fixture
def receiver(settings):
    settings.WEBHOOKS_ALLOW_HTTP = settings.WEBHOOKS_ALLOW_PRIVATE = True
    started = Receiver(delay=0.02).start()
    yield started
    started.stop()


def made_events(receiver: Receiver) -> set[str]:
    owner = make_user()
    _, secret = services.webhook_create(
        actor=owner, team=personal_team(owner), url=receiver.url, events=["link.created"]
    )
    receiver.secrets.append(secret)
    link_bulk_create(owner=owner, items=[(LinkFields(url=f"https://example.org/{n}"), None) for n in range(EVENTS)])
    ids = set(Message.objects.values_list("msg_id", flat=True))
    assert len(ids) == EVENTS
    return ids


def wait_for(condition, *, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def delivered() -> int:
    return Message.objects.filter(state="delivered").count()


def test_a_deliverer_killed_while_sending_loses_no_message(tmp_path, receiver):
    ids = made_events(receiver)
    first = spawn_deliverer(tmp_path, "first")
    try:
        wait_for(lambda: len(receiver.got) >= 60, seconds=30, what="deliveries under way")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        time.sleep(0.5)  # requests it had sent are read by the receiver's threads
        got_at_kill = set(receiver.ids())
        recorded_at_kill = set(Message.objects.filter(attempts__gt=0).values_list("msg_id", flat=True))
        assert len(got_at_kill) < EVENTS, "the kill must come while messages are still to be sent"
        second = spawn_deliverer(tmp_path, "second")
        try:
            wait_for(lambda: delivered() == EVENTS, seconds=90, what="every message delivered")
        finally:
            second.terminate()
            second.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    got = receiver.ids()
    assert set(got) == ids  # every message, and none that was not made
    assert all(delivery.verified for delivery in receiver.got)
    assert Message.objects.count() == EVENTS  # none made twice
    # Only what the killed deliverer had sent without recording it came again.
    twice = {msg_id for msg_id in ids if got.count(msg_id) > 1}
    assert twice <= got_at_kill - recorded_at_kill, twice - (got_at_kill - recorded_at_kill)
    assert all(got.count(msg_id) <= 2 for msg_id in ids)


def test_postgresql_restarted_under_the_deliverer(tmp_path, receiver, servers):
    ids = made_events(receiver)
    deliverer = spawn_deliverer(tmp_path, "deliverer")
    try:
        wait_for(lambda: len(receiver.got) >= 60, seconds=30, what="deliveries under way")
        connection.close()
        servers.restart_postgres()
        wait_for(lambda: delivered() == EVENTS, seconds=90, what="every message delivered")
        assert deliverer.poll() is None, "the deliverer went on after PostgreSQL came back"
    finally:
        deliverer.terminate()
        deliverer.wait(timeout=30)
    assert set(receiver.ids()) == ids
    assert all(delivery.verified for delivery in receiver.got)
    log = (tmp_path / "deliverer.log").read_text()
    assert "retrying" in log, log

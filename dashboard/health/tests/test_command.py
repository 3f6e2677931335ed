"""`manage.py check_links` as supervisord and Compose run it, a process of
its own on the test database: off, it only waits for its stop; on, a stop
in the middle of a round ends it at once, keeping what it found."""

import os
import signal
import subprocess
import sys
import time

import pytest

from health.models import LinkHealth
from slingshot.release import REPO_DIR
from testing.fixtures import database_url

from .servers import Destinations
from .test_checks import link_to

pytestmark = pytest.mark.django_db(transaction=True)


def start(**env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(REPO_DIR / "dashboard" / "manage.py"), "check_links"],
        env={**os.environ, "DATABASE_URL": database_url(), "LINK_HEALTH_ALLOW_PRIVATE": "true", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stopped(process: subprocess.Popen, within: float) -> tuple[int, float]:
    """Its exit status after a SIGTERM, and how long it took to exit."""
    asked = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(within)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    return code, time.monotonic() - asked


def test_with_link_health_hours_0_it_checks_nothing_and_waits_for_its_stop(user):
    with Destinations() as destinations:
        link_to(user, destinations.at("/gone"))
        process = start(LINK_HEALTH_HOURS="0")
        assert "LINK_HEALTH_HOURS is 0" in process.stdout.readline()
        time.sleep(0.5)
        code, took = stopped(process, within=10)
    assert code == 0 and took < 5
    assert destinations.connections == 0 and not LinkHealth.objects.exists()


def test_a_stop_in_the_middle_of_a_round_ends_it_keeping_what_it_found(user):
    with Destinations() as destinations:
        links = [link_to(user, destinations.at(path)) for path in ("/ok", "/gone", "/error")]
        process = start(LINK_HEALTH_HOURS="24", LINK_HEALTH_HOST_INTERVAL="30")
        deadline = time.monotonic() + 30
        while not LinkHealth.objects.exists():
            assert time.monotonic() < deadline and process.poll() is None, process.stdout.read()
            time.sleep(0.05)
        code, took = stopped(process, within=10)
    assert code == 0 and took < 10, took  # a third of the interval the round would wait for its next request
    assert list(LinkHealth.objects.values_list("link_id", flat=True)) == [links[0].pk]
    assert len(destinations.seen.requests) == 1

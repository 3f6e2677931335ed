"""Shlink's own JavaScript SDK (tests/shlink-sdk/, pinned, installed from
npm by bin/setup, unmodified) against a real stack: the dashboard under
gunicorn, the edge, PostgreSQL, Redis and the click importer; every method
of the SDK, with node's test runner (tests/shlink-sdk/sdk.test.mjs). Every
visit it makes is accounted for afterwards, those it deletes as deleted."""

import os
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone

import pytest
from django.core.management import call_command
from django.db import connection

from devstack import REPO
from testing.accounting import even_at, forget_the_accounting, since, totals
from testing.factories import make_user
from tokens.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)

SDK = REPO / "tests" / "shlink-sdk"


def test_shlinks_sdk_drives_every_method_against_a_real_stack(make_edge, servers):
    edge = make_edge(workers=1)  # whose journals have counted nothing yet
    staff, other = make_user(is_staff=True), make_user()
    _, write_key = token_create(user=staff, name="sdk", scope="write")
    _, read_key = token_create(user=staff, name="sdk-read", scope="read")
    _, other_key = token_create(user=other, name="sdk-other", scope="write")
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "EDGE_BASE_URL": edge.url,
    }
    port = servers.start_dashboard(env)
    dashboard = servers.processes[-1]
    # Clicks other tests left in the stream are stored before the SDK
    # counts any, and forgotten: then the importer follows, as `make run` runs it.
    start = datetime.now(timezone.utc)
    forget_the_accounting("sdk-before")
    consumer = "sdk-" + uuid.uuid4().hex
    importer = subprocess.Popen(
        [sys.executable, str(REPO / "dashboard" / "manage.py"), "import_clicks", "--consumer", consumer],
        env=env,
        stdout=open(servers.root / "sdk-importer.log", "ab"),
        stderr=subprocess.STDOUT,
    )
    try:
        result = subprocess.run(
            ["node", "--test", "--test-reporter=spec", "sdk.test.mjs"],
            cwd=SDK,
            env={
                **os.environ,
                "SHLINK_URL": f"http://127.0.0.1:{port}",
                "SHLINK_KEY": write_key,
                "SHLINK_READ_KEY": read_key,
                "SHLINK_OTHER_KEY": other_key,
                "EDGE_URL": edge.url,
            },
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        importer.terminate()
        importer.wait(timeout=30)
        dashboard.terminate()
        dashboard.wait(timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ℹ fail 0" in result.stdout and "ℹ pass 16" in result.stdout, result.stdout
    assert edge.errors() == ""
    # Every click the edge served is stored, or deleted through the SDK.
    deadline = time.monotonic() + 30
    while not (hours := even_at(start)):
        # What the importer said goes with the figures: an uneven hour is read from both.
        assert time.monotonic() < deadline, (
            [(hour.hour, hour.served, hour.stored, hour.deleted) for hour in since(start)],
            (servers.root / "sdk-importer.log").read_text(errors="replace")[-6000:],
        )
        # As the importer's consumer, which takes first the entries the
        # stopped importer had read and not yet stored (as `make run`'s does
        # after a restart); another consumer would wait CLICK_IMPORT_CLAIM_IDLE_MS.
        call_command("import_clicks", "--once", "--consumer", consumer)
    found = totals(hours)
    assert found["deleted_clicks"] >= 3 and found["deleted_orphans"] >= 1 and found["served_redirects"] >= 3

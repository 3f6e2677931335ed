"""A short `make loadtest` run against a throwaway stack: every redirect is one stored click."""

import os
import subprocess
import sys

import pytest
from django.db import connection

from devstack import REPO

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow
def test_a_short_load_test_reconciles_every_click(live_server, edge, tmp_path):
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "SLINGSHOT_EDGE_URL": edge.url,
        "SLINGSHOT_DASHBOARD_URL": live_server.url,
        "LOCUST_RUN_TIME": "8s",
        "LOCUST_USERS": "6",
        "LOCUST_SPAWN_RATE": "6",
        "LOADTEST_LINKS": "300",
        "LOADTEST_REPORTS": str(tmp_path / "reports"),
        "LOADTEST_USER_CLASSES": os.environ.get("LOADTEST_USER_CLASSES", "RedirectUser ApiUser DashboardUser"),
    }
    importer = subprocess.Popen(
        [sys.executable, str(REPO / "dashboard" / "manage.py"), "import_clicks", "--consumer", "loadtest-smoke"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        result = subprocess.run(
            [sys.executable, str(REPO / "loadtest" / "run_loadtest.py")],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        importer.terminate()
        importer.wait(timeout=30)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    reconciled = [line for line in output.splitlines() if line.startswith("reconciled: ")]
    assert reconciled, output[-2000:]
    stored, counted = reconciled[0].split()[1].split("/")
    assert stored == counted and int(counted) > 100, reconciled[0]
    assert (tmp_path / "reports" / "report.html").exists()

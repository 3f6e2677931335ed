import os
import subprocess

import pytest
from django.db import connection

import devstack
from devstack.pytest_plugin import Response, http_request

GUNICORN_CONF = devstack.REPO / "dashboard" / "gunicorn.conf.py"


def database_url() -> str:
    """The test database, for a dashboard process of a test's own."""
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


@pytest.fixture
def make_dashboard(tmp_path):
    """Starts the dashboard under gunicorn, as docker-compose.yml does, with
    these settings on top of the test run's; stops it after the test."""
    started = []

    def start(env: dict[str, str] | None = None, *, workers: int = 2) -> int:
        port = devstack.free_port()
        log = open(tmp_path / f"gunicorn-{port}.log", "ab")
        process = subprocess.Popen(
            [*devstack.gunicorn_command(port, workers=workers), "--config", str(GUNICORN_CONF)],
            env={**os.environ, "DATABASE_URL": database_url(), **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(process)
        devstack.wait_for_port(port, process=process)
        return port

    yield start
    for process in started:
        process.terminate()
    for process in started:
        process.wait(timeout=30)


def request(port: int, path: str, *, headers: dict[str, str] | None = None) -> Response:
    """One request to a dashboard of a test's own, with the Host header given
    (default: the address it listens on), no redirect followed."""
    return http_request(port, path, headers={"Host": f"127.0.0.1:{port}", **(headers or {})})

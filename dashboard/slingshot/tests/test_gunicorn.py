"""The dashboard's gunicorn settings (dashboard/gunicorn.conf.py), under a
real gunicorn: the master loads the application once and forks its
workers, and a worker forked as gunicorn is told to stop obeys the stop."""

import subprocess
import time

import pytest

from devstack import REPO
from loadtest.procstat import children, cpu_seconds
from testing.fixtures import start_dashboard

pytestmark = pytest.mark.django_db(transaction=True)

OURS = REPO / "dashboard" / "gunicorn.conf.py"

# Our settings, and a second worker slow to start: it sits in post_fork,
# where a new process still has the master's signal handlers, for 3 s
# before our hook runs.
SLOW_SECOND_WORKER = f"""
import runpy, time
globals().update(runpy.run_path({str(OURS)!r}))
_ours = post_fork

def post_fork(server, worker):
    if worker.age == 2:
        time.sleep(3)
    _ours(server, worker)
"""


def test_a_worker_forked_as_gunicorn_stops_obeys_the_stop(tmp_path):
    config = tmp_path / "gunicorn.conf.py"
    config.write_text(SLOW_SECOND_WORKER)
    process, _ = start_dashboard(tmp_path, config=config)
    stopped = time.monotonic()
    process.terminate()  # the first worker answered; the second is still in post_fork
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail("gunicorn waited out its graceful timeout for a worker that never heard the stop")
    assert process.returncode == 0, "".join(log.read_text() for log in tmp_path.glob("gunicorn-*.log"))[-3000:]
    assert time.monotonic() - stopped < 10


def test_the_master_loads_the_dashboard_and_the_workers_start_without_loading_it(tmp_path):
    process, _ = start_dashboard(tmp_path)
    try:
        deadline = time.monotonic() + 30
        while len(children(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = children(process.pid)
        assert len(workers) == 2
        # Loading Django, the URL conf and the views is a second or more of CPU.
        assert cpu_seconds([process.pid]) > 0.5
        assert all(cpu_seconds([worker]) < 0.3 for worker in workers), [cpu_seconds([w]) for w in workers]
    finally:
        process.terminate()
        process.wait(timeout=30)

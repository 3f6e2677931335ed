"""The dashboard's gunicorn settings (dashboard/gunicorn.conf.py), under a
real gunicorn: the master loads the application once and forks its
workers, and a worker forked as gunicorn is told to stop obeys the stop."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from devstack import REPO
from devstack.dashboard import gunicorn_command
from devstack.net import free_port, wait_for_answer
from testing.fixtures import database_url

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


def start(config: str, tmp_path, *, workers: int) -> tuple[subprocess.Popen, int]:
    path = tmp_path / "gunicorn.conf.py"
    path.write_text(config)
    port = free_port()
    command = gunicorn_command(port, workers=workers)
    command[command.index("--config") + 1] = str(path)
    log = open(tmp_path / "gunicorn.log", "ab")
    process = subprocess.Popen(
        command,
        env={**os.environ, "DATABASE_URL": database_url()},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wait_for_answer(port, process=process)
    return process, port


def workers_of(master: int) -> list[int]:
    return [int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_worker_forked_as_gunicorn_stops_obeys_the_stop(tmp_path):
    process, _ = start(SLOW_SECOND_WORKER, tmp_path, workers=2)
    stopped = time.monotonic()
    process.terminate()  # the first worker answered; the second is still in post_fork
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail("gunicorn waited out its graceful timeout for a worker that never heard the stop")
    assert process.returncode == 0, (tmp_path / "gunicorn.log").read_text()[-3000:]
    assert time.monotonic() - stopped < 10


def test_the_master_loads_the_dashboard_and_the_workers_start_without_loading_it(tmp_path):
    process, _ = start(OURS.read_text(), tmp_path, workers=2)
    try:
        deadline = time.monotonic() + 30
        while len(workers_of(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = workers_of(process.pid)
        assert len(workers) == 2
        # Loading Django, the URL conf and the views is a second or more of CPU.
        assert cpu_seconds(process.pid) > 0.5
        assert all(cpu_seconds(worker) < 0.3 for worker in workers), [cpu_seconds(w) for w in workers]
    finally:
        process.terminate()
        process.wait(timeout=30)

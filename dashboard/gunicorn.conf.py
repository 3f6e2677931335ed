"""gunicorn's settings for the dashboard, given with
`--config dashboard/gunicorn.conf.py` (the image's command and
docker-compose.yml's dashboard do, and `make run`: devstack/dashboard.py).

The master loads the application (slingshot/wsgi.py) once and forks its
workers from it (preload_app): a worker starts without importing Django
again, one started after another was killed answers at once, and the
workers share the loaded code's memory. The price is gunicorn's own: a HUP
restarts the workers on the code the master loaded, so new code needs a
restart of gunicorn, as the image's and `make run`'s updates do anyway.
A worker forked as gunicorn is told to stop obeys the stop (post_fork).

Then the two hooks prometheus_client's multiprocess mode needs when
PROMETHEUS_MULTIPROC_DIR is set (slingshot/settings/metrics.py): the folder is emptied of the
counts of an earlier run when gunicorn starts, and a worker that exits has
its live gauges removed (the dashboard has none today; its counters and
histograms keep the counts of workers gone, as they must).
"""

import os
import queue
import signal
from pathlib import Path

preload_app = True


def _metrics_dir() -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "slingshot.settings")
    from django.conf import settings

    return settings.PROMETHEUS_MULTIPROC_DIR


def on_starting(server):
    directory = _metrics_dir()
    if directory:
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.db"):  # prometheus_client's files only, whatever else the folder holds
            stale.unlink()


_STOPS = {signal.SIGTERM, signal.SIGINT, signal.SIGQUIT}


def post_fork(server, worker):
    """Until the worker sets its own signal handlers, a new process has the
    master's, which only queue a signal for the master's loop: a stop the
    master sends it then would be lost, and gunicorn would wait out its
    30 s graceful timeout for a worker that never heard it. From here the
    stop signals end the process as they would any, and one that arrived
    before is found in this process's copy of the master's queue."""
    for stop in _STOPS:
        signal.signal(stop, signal.SIG_DFL)
    arrived = set()
    while True:
        try:
            arrived.add(server.SIG_QUEUE.get_nowait())
        except queue.Empty:
            break
    if arrived & _STOPS:
        os._exit(0)


def child_exit(server, worker):
    if _metrics_dir():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)

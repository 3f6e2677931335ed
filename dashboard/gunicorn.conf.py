"""gunicorn's settings for the dashboard, given with
`--config dashboard/gunicorn.conf.py` (the image's command and
docker-compose.yml's dashboard do, and `make run`: devstack/dashboard.py).

The master loads the application (slingshot/wsgi.py) once and forks its
workers from it (preload_app): a worker starts without importing Django
again, one started after another was killed answers at once, and the
workers share the loaded code's memory. The price is gunicorn's own: a HUP
restarts the workers on the code the master loaded, so new code needs a
restart of gunicorn, as the image's and `make run`'s updates do anyway.

Then the two hooks prometheus_client's multiprocess mode needs when
PROMETHEUS_MULTIPROC_DIR is set (slingshot/settings/metrics.py): the folder is emptied of the
counts of an earlier run when gunicorn starts, and a worker that exits has
its live gauges removed (the dashboard has none today; its counters and
histograms keep the counts of workers gone, as they must).
"""

import os
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


def child_exit(server, worker):
    if _metrics_dir():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)

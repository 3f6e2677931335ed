"""How Slingshot's servers are started on one machine without Docker.

One place that knows how to run PostgreSQL, Redis, the edge nginx, the
dashboard and its front nginx, used by `make run` (devstack/stack.py puts
them under supervisord, whose programs are `python -m devstack PROGRAM`) and
by the test suites, which start their own throwaway copies on free ports
(devstack/throwaway.py, devstack/pytest_plugin.py).

A module for each server: postgres.py, redis.py, edge.py and dashboard.py
(gunicorn and its front), both of the last on nginx.py; net.py for ports,
processes.py for process groups. The scenarios that run against a stack
(faults, several hosts, slow clients) live in loadtest/scenarios/.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

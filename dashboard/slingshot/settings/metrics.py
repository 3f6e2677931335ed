"""Prometheus metrics (slingshot/metrics.py): who may read the dashboard's,
and where the importer and the publisher serve theirs."""

import ipaddress

from .environment import env

# /metrics answers these networks only (the client address as
# slingshot/proxies.py finds it), others get 403.
DASHBOARD_METRICS_ALLOW = [
    ipaddress.ip_network(network, strict=False)
    for network in env.list("DASHBOARD_METRICS_ALLOW", default=["127.0.0.1/32", "::1/128"])
]
# prometheus_client's multiprocess mode, which it turns on itself when this
# variable is in the environment: every gunicorn worker writes its counts to
# files in this folder, and a scrape of /metrics, whichever worker answers
# it, adds them all up. gunicorn empties it when it starts with
# `--config dashboard/gunicorn.conf.py`, as docker-compose.yml runs it.
# Give it to the dashboard only: another process sharing the folder
# would add its own counts to the dashboard's. Unset, each worker keeps its
# own counts, and a scrape sees those of the one worker that answered it.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")
# The importer's and the publisher's metrics, each on its own HTTP port
# (`--metrics-port`); off while unset.
IMPORTER_METRICS_PORT = env.int("IMPORTER_METRICS_PORT", default=None)
IMPORTER_METRICS_ADDRESS = env.str("IMPORTER_METRICS_ADDRESS", default="127.0.0.1")
PUBLISHER_METRICS_PORT = env.int("PUBLISHER_METRICS_PORT", default=None)
PUBLISHER_METRICS_ADDRESS = env.str("PUBLISHER_METRICS_ADDRESS", default="127.0.0.1")

"""Every `make bench-*` script run at a tiny size (--smoke): a script that
breaks fails here, not on the day someone needs its figures. The figures of
a smoke run mean nothing; the full-size runs are outside `make test`
(docs/benchmarks.md)."""

import os
import subprocess
import sys

import pytest

from devstack import REPO

# script and its arguments, a line its run must print (the figure it exists
# for), seconds it may take
SCRIPTS = [
    ("bench_edge.py", "clicks check: OK", 180),
    ("bench_import.py", "enriched  sustained:", 240),
    # Asserts itself that the cluster holds every click; the stream drained.
    ("bench_import.py --store clickhouse", "enriched  import: 20,000 clicks in", 180),
    ("bench_clickhouse_stats.py", "by month, Europe/Paris", 180),
    ("bench_api.py", "stats selector, a whole year by hour", 300),
    ("bench_dashboard.py", "links list, ", 240),
    ("bench_export.py", "both exports in", 180),
    ("bench_box.py", "reconciled: ", 300),
    ("bench_yourls.py", "median: the token", 180),
    ("bench_copy.py", "medians: variant", 180),
    ("bench_webhooks.py", "every one delivered", 240),
    ("bench_live.py", "open pages / none, medians:", 240),
    ("bench_screen.py", "a link's lookup:", 120),
    ("bench_click.py", "ns of the worker's CPU a click", 120),
]


@pytest.mark.slow
@pytest.mark.parametrize(("script", "expected", "timeout"), SCRIPTS, ids=[script for script, *_ in SCRIPTS])
def test_bench_script_runs(script, expected, timeout):
    script, *arguments = script.split()
    result = subprocess.run(
        [sys.executable, str(REPO / "loadtest" / script), "--smoke", *arguments],
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert expected in output, output[-4000:]


def test_every_bench_target_has_a_smoke_run():
    makefile = (REPO / "Makefile").read_text()
    targets = {line.split(":")[0] for line in makefile.splitlines() if line.startswith("bench")}
    scripts = {line.split("loadtest/")[1].split()[0] for line in makefile.splitlines() if "loadtest/bench_" in line}
    assert targets == {
        "bench",
        "bench-import",
        "bench-api",
        "bench-create",
        "bench-dashboard",
        "bench-export",
        "bench-box",
        "bench-yourls",
        "bench-importers",
        "bench-copy",
        "bench-webhooks",
        "bench-live",
        "bench-screen",
        "bench-click",
        "bench-clickhouse-stats",
    }, targets
    # bench_importers.py's small run is dashboard/importers/tests/test_bench.py,
    # bench_create.py's tests/test_bench_create.py.
    assert scripts == {script.split()[0] for script, *_ in SCRIPTS} | {"bench_importers.py", "bench_create.py"}, scripts

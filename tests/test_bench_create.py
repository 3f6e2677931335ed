"""`make bench-create` at a tiny size: the script runs end to end (a stack,
gunicorn, the publisher and an edge, creates at a fixed rate, the
in-process profile, links asked of the edge as their creates answer) and
prints its figures. Its speed is the benchmark's to say."""

import re
import subprocess
import sys

import pytest

from devstack import REPO


@pytest.mark.slow
def test_bench_create_smoke():
    result = subprocess.run(
        [sys.executable, str(REPO / "loadtest" / "bench_create.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert re.search(r"^SQL statements per create: \d+$", output, re.MULTILINE), output[-2000:]
    assert re.search(r"^create: [\d.]+ ms of this process's CPU each", output, re.MULTILINE), output[-2000:]
    assert re.search(
        r"^publisher: [\d.]+ ms of CPU per link delivered, 20 links in batches of 6", output, re.MULTILINE
    ), output[-2000:]
    created = re.search(r"link create at 20/s: (\d+)/(\d+) created .* p99 [\d.]+ ms", output)
    assert created and created.group(1) == created.group(2) == "40", output[-2000:]
    assert re.search(r"CPU per create: [\d.]+ ms, gunicorn [\d.]+, postgres [\d.]+, publisher", output), output[-2000:]
    # Every new link redirected at the first visits after its create answered.
    visible = re.search(r": (\d+)/10 new links redirected at the first visits .* deleted p50 [\d.]+ ms", output)
    assert visible and visible.group(1) == "10", output[-2000:]

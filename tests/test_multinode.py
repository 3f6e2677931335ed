"""A short `make multinode`: two edges on their own Redis replicas and click
stores, Sentinel failover of the Redis primary under traffic, an importer
host killed, an edge restarted; nothing lost, nothing stored twice
(devstack/multinode.py)."""

import shutil
import tempfile
from pathlib import Path

import pytest

from devstack.multinode import Scenario, Topology


@pytest.fixture
def topology():
    root = Path(tempfile.mkdtemp(prefix="slingshot-multinode-test-"))
    root.chmod(0o755)
    topology = Topology(root)
    try:
        topology.start(log=lambda line: None)
        yield topology
    finally:
        topology.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_a_redis_failover_under_traffic_loses_no_click_and_no_link_change(topology):
    result = Scenario(topology, rate=60, log=lambda line: None).run(warmup=1.5, drain_timeout=120)
    report = "\n".join(result.lines())
    assert all(result.served.values()), report  # both edges redirected
    assert result.stored == result.total_served, report
    assert result.duplicates == 0, report
    assert result.reconciled, report
    # Sentinel promoted a replica, and the change made meanwhile reached both edges.
    assert 0 < result.without_primary < 30, report
    assert result.change_seen_after_promotion < 10, report
    # Only the restarted edge may have refused visitors, while it was down.
    assert result.edge_errors["edge1"] == 0, report

"""A short `make multinode`: two edges on their own Redis replicas and click
stores, Sentinel failover of the Redis primary under traffic, an importer
host killed, an edge restarted; nothing lost, nothing stored twice
(devstack/multinode.py)."""

import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from devstack.faults import Visitors
from devstack.multinode import Scenario, Topology
from devstack.supervised import wait_until


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
    # A person's own change is in their list at once, even from a paused
    # replica, and the list reads the replica again a moment later.
    assert result.own_change_listed and result.replica_listed_after_pin, report
    # Sentinel promoted a replica, and the change made meanwhile reached both edges.
    assert 0 < result.without_primary < 30, report
    assert result.change_seen_after_promotion < 10, report
    # No edge ever took the link for unknown. The edge that was not restarted
    # failed a visit only with a 503, for a link it had to look up while its
    # replica was loading a new primary's data.
    assert result.taken_for_unknown == 0, report
    assert set(result.failure_times["edge1"]) <= {"HTTP 503"}, report


def test_with_no_redis_primary_at_all_edges_redirect_and_clicks_are_stored_and_changes_wait(topology):
    """The primary and every Sentinel away (no failover possible): the edges
    serve from their replicas, the importers store their clicks meanwhile,
    and a link created in the outage reaches both edges once the primary is back."""
    scenario = Scenario(topology, rate=60, log=lambda line: None)
    scenario.create("away")
    scenario.settle("away", "https://example.com/away")
    sentinels = [topology.processes[f"sentinel{n}"] for n in range(1, 4)]
    primary = topology.processes["redis-a"]
    for process in [*sentinels, primary]:
        process.stop(signal.SIGKILL)

    visitors = [Visitors(port, "away", threads=2, rate=60).start() for port in topology.edge_ports]
    try:
        status, _ = scenario.api(
            "/api/v1/links", method="POST", body={"url": "https://example.com/late", "slug": "late"}
        )
        assert status == 201  # PostgreSQL has it; the outbox holds it for Redis
        wait_until(lambda: scenario.stored("away")[0] >= 100, timeout=60, what="clicks stored with no primary")
    finally:
        for v in visitors:
            v.stop()
    assert all(v.served["away"] > 0 and not v.failures for v in visitors)
    assert scenario.location(0, "late") is None  # not delivered yet

    topology.start_redis("redis-a", topology.redis_ports["redis-a"])
    for n, port in enumerate(topology.sentinel_ports, 1):
        topology.start_sentinel(n, port)
    wait_until(lambda: scenario.every_edge_serves("late", "https://example.com/late"), timeout=60, what="the late link")
    served = sum(v.served["away"] for v in visitors) + sum(
        n for (_, slug), n in scenario.probes.items() if slug == "away"
    )
    wait_until(lambda: scenario.stored("away")[0] >= served, timeout=60, what="every click stored")
    assert scenario.stored("away") == (served, 0)

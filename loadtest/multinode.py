"""`make multinode`: Slingshot across several hosts, on this machine
(loadtest/scenarios/multinode/, docs/scale-out.md).

Starts a Redis primary with two replicas and three Sentinels, a click store
per edge, PostgreSQL with a streaming replica, two edges, two importer hosts,
the publisher and the dashboard; sends visitors to both edges; kills the
Redis primary and keeps it away (--away, 180 s) while Sentinel promotes a
replica, a link changes and a new one is made; holds the replicas still so
that the publisher's WAIT is refused and retried; kills one importer host
with a batch open; restarts one edge; then waits and prints
`reconciled: stored/served`, the failed visits per edge, the seconds without
a working primary and until every edge served the changed link. Exits 1 on
any difference, a failed visit to the existing link, a 404 for a link that
exists, or a change followed later than 1.5 s after the promotion.
"""

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from loadtest.scenarios.multinode.scenario import Scenario
from loadtest.scenarios.multinode.topology import Topology


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make multinode", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="visits per second to each edge")
    parser.add_argument("--away", type=float, default=180.0, help="seconds the killed primary stays away")
    parser.add_argument("--keep", action="store_true", help="keep the folder with every piece's log")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="slingshot-multinode-"))
    root.chmod(0o755)
    topology = Topology(root)
    try:
        topology.start()
        result = Scenario(topology, rate=args.rate).run(away=args.away)
    finally:
        topology.stop()
        if args.keep:
            print(f"logs: {root / 'logs'}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    for line in result.lines():
        print(line)
    return 0 if result.reconciled and not result.taken_for_unknown and result.held_up else 1


if __name__ == "__main__":
    sys.exit(main())

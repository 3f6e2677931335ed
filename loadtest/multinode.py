"""`make multinode`: Slingshot across several hosts, on this machine
(devstack/multinode.py, docs/scale-out.md).

Starts a Redis primary with two replicas and three Sentinels, a click store
per edge, PostgreSQL with a streaming replica, two edges, two importer hosts,
the publisher and the dashboard; sends visitors to both edges; kills the
Redis primary and lets Sentinel promote a replica while a link changes;
kills one importer host; restarts one edge; then waits and prints
`reconciled: stored/served`, the seconds without a working primary and the
seconds until every edge served the changed link. Exits 1 on any difference,
or if an edge answered the existing link 404.
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from devstack.multinode import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

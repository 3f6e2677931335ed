"""`make multinode`: Slingshot across several hosts, on this machine
(devstack/multinode.py, docs/scale-out.md).

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

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from devstack.multinode import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

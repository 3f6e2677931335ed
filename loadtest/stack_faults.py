"""`make stack-faults`: the local stack's promise under single faults.

Starts a fresh `make run` stack in a temporary directory on free ports,
kills each process with SIGKILL in turn (importer, publisher, gunicorn
master, the dashboard front's nginx master, an edge nginx worker, the
edge's nginx master, Redis, PostgreSQL) while visitors click a short link
of the fault's own (STACK_FAULTS_RATE requests/s, default 300), waits for
it to come back, stops the visitors,
waits for the importer, and prints how long each took to come back, the
redirects served against the clicks stored, and the accounting's
difference (served minus stored) over every hour so far. Stops the stack
with Ctrl-C (on its pseudo-terminal) at the end.

Exits 1 if any redirect was not stored (or stored twice), if the accounting
is not even, or if visitors saw an error during any fault but the edge's
own.
"""

import argparse
import os
import secrets
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from devstack.supervised import SupervisedStack  # noqa: E402
from loadtest.scenarios.faults import FaultRun  # noqa: E402


def main() -> int:
    # No options: the rate is STACK_FAULTS_RATE. Parsed so that --help, or
    # a mistyped option, does not start a run of several minutes.
    argparse.ArgumentParser(prog="make stack-faults", description=__doc__.split("\n\n")[0]).parse_args()
    root = Path(tempfile.mkdtemp(prefix="slingshot-faults-"))
    stack = SupervisedStack(
        root, env={"SLINGSHOT_ADMIN_USER": "faults", "SLINGSHOT_ADMIN_PASSWORD": secrets.token_urlsafe(16)}
    )
    ok = False
    try:
        print(f"starting `make run` in {root} (ports {stack.ports})", flush=True)
        stack.start()
        run = FaultRun(
            stack,
            admin="faults",
            rate=float(os.environ.get("STACK_FAULTS_RATE", "300")),
            log=lambda line: print(line, flush=True),
        )
        report = run.run()
        print()
        print(report.table())
        stack.interrupt()
        status = stack.wait_exit(timeout=180)
        print(f"\nCtrl-C: make run exited with status {status}")
        ok = (
            all(result.every_redirect_stored for result in report.results)
            and all(set(result.accounting.values()) == {0} for result in report.results)
            and not report.failures_outside_edge
            and status == 0
            and not any(r.dashboard_errors for r in report.recoveries)
        )
        if report.failures_outside_edge:
            print("failed visits outside the edge's own restart:", *report.failures_outside_edge[:20], sep="\n  ")
        if not ok:
            print(f"FAILED; the stack's console and logs are kept in {root}", file=sys.stderr)
            return 1
        return 0
    finally:
        stack.cleanup(remove=ok)


if __name__ == "__main__":
    sys.exit(main())

"""`make slow-clients`: the dashboard under slow clients for a minute.

Starts a fresh `make run` stack in a temporary directory on free ports and
holds 400 slow connections (loadtest/scenarios/slowclients.py: a header
line, or a byte of a body, every 5 s; opened again whenever the server lets one go;
from 50 addresses) to the dashboard's front for 60 s, while probes ask, one
request at a time, the dashboard's overview and links pages, its sign-in
page and API, and through the edge a link's password check and the YOURLS
API. Prints each probe's latency percentiles, then stops the stack with
Ctrl-C (on its pseudo-terminal).

Exits 1 if any answer was not the one expected or took longer than a
second. `--target gunicorn` aims the slow clients at gunicorn itself, as
the dashboard was published before it had a front (three are enough).
tests/test_stack.py has the short form: 300 for 10 s.
"""

import argparse
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from devstack.supervised import SupervisedStack  # noqa: E402
from loadtest.scenarios.slowclients import SlowClients, probe_all, stack_probes, table  # noqa: E402

WITHIN = 1.0  # seconds


def main() -> int:
    parser = argparse.ArgumentParser(prog="make slow-clients", description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=400, help="slow connections held at once")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long they are held")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between two pieces of a slow request")
    parser.add_argument("--target", choices=("front", "gunicorn"), default="front", help="whom the slow clients ask")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="slingshot-slow-"))
    stack = SupervisedStack(
        root, env={"SLINGSHOT_ADMIN_USER": "slow", "SLINGSHOT_ADMIN_PASSWORD": secrets.token_urlsafe(16)}
    )
    ok = False
    try:
        print(f"starting `make run` in {root} (ports {stack.ports})", flush=True)
        stack.start()
        probes = stack_probes(stack)
        port = stack.ports["DASHBOARD_PORT" if args.target == "front" else "GUNICORN_PORT"]
        print(
            f"{args.connections} slow clients of the {args.target} (127.0.0.1:{port}), a piece every "
            f"{args.interval:g} s, for {args.seconds:g} s",
            flush=True,
        )
        slow = SlowClients(port, connections=args.connections, interval=args.interval).start()
        held = []
        try:
            probe_all(probes, seconds=args.seconds, between=lambda: held.append(slow.held()))
        finally:
            slow.stop()
        print(
            f"\nslow clients: {slow.opened} connections made ({slow.let_go} let go by the server and made again, "
            f"{slow.failed} refused); held at once {statistics.median(held):.0f} of {args.connections} (median), "
            f"{min(held)} (fewest)\n"
        )
        print(table(probes, within=WITHIN))
        for probe in probes:
            for wrong in probe.wrong[:3]:
                print(f"  {probe.name}: {wrong}")
        ok = all(not probe.wrong and probe.slower_than(WITHIN) == 0 for probe in probes)
        stack.interrupt()
        print(f"\nCtrl-C: make run exited with status {stack.wait_exit(timeout=180)}")
    finally:
        stack.cleanup()
    print("every answer right and within a second" if ok else "NOT every answer right and within a second")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

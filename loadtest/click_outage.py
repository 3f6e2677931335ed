"""`make click-outage`: the clicks of a long Redis outage under load.

Starts a fresh `make run` stack in a temporary directory on free ports
(its edge keeps links cached for two hours, so that the link stays served
through the outage), makes one link, and sends it a steady rate of visits
with wrk (--rate, default 5,000 a second). After 10 s it stops Redis
(SIGSTOP: hung, every connection waits) for --minutes (default 10), then
lets it go on. It prints the edge's click spool every 30 s (clicks waiting,
bytes on disk), its peak, how long the edge took to send everything to
Redis once it was back, and then, once the importer has caught up, the
redirects the edge served against the clicks stored and the accounting's
difference over the hours of the run. Exits 1 unless every answer wrk
counted was a redirect the edge counted (the link is cached, so the outage
must not cost a visit), every redirect served is one click stored and the
accounting is even.
"""

import argparse
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from devstack.supervised import SupervisedStack, wait_until  # noqa: E402
from loadtest.scenarios.faults import FaultRun  # noqa: E402
from loadtest.scenarios.visitors import Visitors, request  # noqa: E402

SLUG = "outage"
SERVED = 'slingshot_edge_requests_total{outcome="redirect"}'
DEPTH = "slingshot_edge_click_buffer_depth"
SPOOL = "slingshot_edge_click_spool_bytes"
DROPPED = "slingshot_edge_clicks_dropped_total"


def edge_metrics(port: int) -> dict[str, float]:
    time.sleep(0.3)  # every worker moves its counts to the shared dict every 0.1 s
    status, body = request(port, "/metrics")
    assert status == 200, body
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in body.decode().splitlines()
        if line and not line.startswith("#")
    }


@dataclass
class Outage:
    """The outage as the run goes: Redis's pid while it is hung, and what the edge did meanwhile."""

    seconds: float
    redis_pid: int | None = None  # while Redis is hung (SIGSTOP); SIGCONT'd on the way out
    before: dict[str, float] = field(default_factory=dict)  # the edge's metrics as Redis was hung
    hung_at: float = 0.0
    back_at: float = 0.0
    peak_depth: float = 0.0  # clicks waiting in the spool
    peak_bytes: float = 0.0  # the spool on disk
    served: float = 0.0  # redirects during the outage
    drained: float = 0.0  # seconds from Redis back to the spool empty


def cache_the_link(run: FaultRun) -> None:
    """Makes the link and visits it until every edge worker has it cached."""
    run.visitors = Visitors(run.edge_port, SLUG)
    run.create_link(SLUG)
    wait_until(lambda: run.redirects(SLUG), timeout=60, what=f"/{SLUG} to redirect")
    for _ in range(200):  # every worker has it cached
        run.redirects(SLUG)


def start_wrk(stack: SupervisedStack, args: argparse.Namespace, outage: Outage) -> subprocess.Popen:
    """wrk on the link at --rate over --connections, until well after the outage."""
    paths = stack.root / "paths.txt"
    paths.write_text(f"/{SLUG}\n")
    pause_ms = max(0, args.connections * 1000 / args.rate - 0.3)
    return subprocess.Popen(
        ["wrk", "-t1", f"-c{args.connections}", f"-d{int(outage.seconds + 25)}s", "-s"]
        + [str(REPO / "loadtest" / "click_outage.wrk.lua"), stack.edge_url, str(paths), f"{pause_ms:.2f}"],
        stdout=subprocess.PIPE,
        text=True,
    )


def hang_redis(stack: SupervisedStack, run: FaultRun, outage: Outage) -> None:
    """Hangs Redis (SIGSTOP) for the outage, noting the spool's peak and printing it every 30 s."""
    outage.redis_pid = stack.info("redis")["pid"]
    before = outage.before = edge_metrics(run.edge_port)
    os.kill(outage.redis_pid, signal.SIGSTOP)
    hung_at = outage.hung_at = time.monotonic()
    print(f"Redis hung (SIGSTOP, pid {outage.redis_pid}) for {outage.seconds:.0f}s", flush=True)
    last_print = 0.0
    while (elapsed := time.monotonic() - hung_at) < outage.seconds:
        values = edge_metrics(run.edge_port)
        outage.peak_depth = max(outage.peak_depth, values[DEPTH])
        outage.peak_bytes = max(outage.peak_bytes, values[SPOOL])
        if elapsed - last_print >= 30:
            last_print = elapsed
            rate = (values[SERVED] - before[SERVED]) / max(elapsed, 1)
            print(
                f"  {elapsed:5.0f}s: {values[SERVED] - before[SERVED]:.0f} redirects ({rate:.0f}/s), "
                f"{values[DEPTH]:.0f} clicks waiting, spool {values[SPOOL] / 2**20:.1f} MiB",
                flush=True,
            )
        time.sleep(min(5, outage.seconds - elapsed) if outage.seconds > elapsed else 0)


def let_redis_go_on(run: FaultRun, outage: Outage) -> None:
    """Lets Redis go on (SIGCONT) and waits until the edge has sent it every spooled click."""
    during = edge_metrics(run.edge_port)
    os.kill(outage.redis_pid, signal.SIGCONT)
    outage.redis_pid = None
    back_at = outage.back_at = time.monotonic()
    outage.served = during[SERVED] - outage.before[SERVED]
    print(
        f"Redis back after {back_at - outage.hung_at:.0f}s: {outage.served:.0f} redirects during the outage "
        f"({outage.served / (back_at - outage.hung_at):.0f}/s)",
        flush=True,
    )
    wait_until(lambda: edge_metrics(run.edge_port)[DEPTH] == 0, timeout=600, what="the spool sent", interval=0.5)
    outage.drained = time.monotonic() - back_at
    print(f"every spooled click in Redis {outage.drained:.1f}s after it came back", flush=True)


def wrk_answers(
    wrk: subprocess.Popen, run: FaultRun, before_wrk: dict[str, float], outage: Outage
) -> tuple[bool, dict[str, float]]:
    """Prints wrk's answers against the edge's; whether every one was a redirect, and the edge's metrics."""
    wrk_out, _ = wrk.communicate(timeout=outage.seconds + 120)
    requests = re.search(r"(\d+) requests in", wrk_out)
    after = edge_metrics(run.edge_port)
    served = int(after[SERVED])
    other = [line.strip() for line in wrk_out.splitlines() if line.strip().startswith(("Non-2xx", "Socket errors"))]
    outcomes = {
        key.split('"')[1]: after[key] - before_wrk.get(key, 0)
        for key in after
        if key.startswith("slingshot_edge_requests_total{") and after[key] != before_wrk.get(key, 0)
    }
    print(
        f"wrk: {requests.group(1) if requests else '?'} answers{'; ' if other else ''}{'; '.join(other)}; "
        f"the edge's answers to it by outcome: {json.dumps(outcomes)}; {served} redirects in all"
    )
    # The edge may have answered a request wrk stopped waiting for, never fewer than wrk counted.
    visits_ok = (
        requests is not None
        and not other
        and set(outcomes) <= {"redirect"}
        and int(requests.group(1)) <= outcomes.get("redirect", 0)
    )
    return visits_ok, after


def every_click_stored(run: FaultRun, outage: Outage, after: dict[str, float]) -> bool:
    """Waits for the importer, prints the outage's figures, and whether each redirect is one click stored."""
    served = int(after[SERVED])
    # Followed by the link's total (one row), not by counting millions of rows, whose time would count as the import's.
    wait_until(lambda: run.counted(SLUG) >= served, timeout=900, what="every click stored", interval=0.5)
    imported = time.monotonic() - outage.back_at
    run.wait_import_lag_zero()
    stored = run.stored()[SLUG]
    accounting = run.settled_accounting()
    print(
        f"\noutage {outage.seconds / 60:.1f} min at {outage.served / outage.seconds:.0f} redirects/s; spool peak "
        f"{outage.peak_depth:.0f} clicks, {outage.peak_bytes / 2**20:.1f} MiB; sent to Redis {outage.drained:.1f}s "
        f"after it came back, all stored {imported:.0f}s after; dropped {after[DROPPED]:.0f}\n"
        f"redirects served {served}, clicks stored {stored}; accounting (served - stored) by hour: "
        f"{json.dumps(accounting)}"
    )
    return stored == served and after[DROPPED] == 0 and set(accounting.values()) == {0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=5000.0, help="visits a second")
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="slingshot-outage-"))
    stack = SupervisedStack(
        root,
        env={
            "SLINGSHOT_ADMIN_USER": "outage",
            "SLINGSHOT_ADMIN_PASSWORD": secrets.token_urlsafe(16),
            "EDGE_CACHE_TTL": "7200",
        },
    )
    ok = False
    outage = Outage(seconds=args.minutes * 60)
    try:
        print(f"starting `make run` in {root} (ports {stack.ports})", flush=True)
        stack.start()
        run = FaultRun(stack, admin="outage", log=lambda line: print(line, flush=True))
        cache_the_link(run)
        before_wrk = edge_metrics(run.edge_port)
        wrk = start_wrk(stack, args, outage)
        time.sleep(10)
        hang_redis(stack, run, outage)
        let_redis_go_on(run, outage)
        visits_ok, after = wrk_answers(wrk, run, before_wrk, outage)
        ok = every_click_stored(run, outage, after) and visits_ok
        print("OK" if ok else "FAILED", flush=True)
        stack.interrupt()
        stack.wait_exit(timeout=180)
        return 0 if ok else 1
    finally:
        if outage.redis_pid:
            os.kill(outage.redis_pid, signal.SIGCONT)
        stack.cleanup(remove=ok)
        if not ok:
            print(f"the stack's console and logs are kept in {root}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

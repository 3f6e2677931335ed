"""`make bench-box`: the whole box, every click stored as it comes.

Starts a fresh `make run` stack (devstack/supervised.py: PostgreSQL, Redis,
the edge, the dashboard, the publisher and the importer, on free ports) and,
beside it, a bare nginx with the same number of workers that answers
`return 302` with the edge's headers and no Lua (bench_edge.py's ceiling).
Makes one link, then runs wrk (the client script of `make bench`) in rounds:
the ceiling, then the stack's edge on the link while the importer stores
every click, then the ceiling again, and so on.

For each run of the edge it prints the redirects served a second, the
clicks left to import when wrk stopped, how long the importer took to store
the rest, the CPU each program used per click, and the clicks a stream
entry carried (the edge's XADDs, from Redis's commandstats). Its figures:

  edge req/s / ceiling   the edge's redirects a second over the mean of the
                         ceiling runs either side of it
  stored live / ceiling  the clicks stored a second, from wrk's start until
                         the last of them is in PostgreSQL, over the same
                         mean: equal to the first when the importer keeps up

While the rounds run it follows the import by the link's all-time total
(one row the importer adds to as it stores the clicks), not by counting the
rows of `clicks`, whose CPU would count as PostgreSQL's per click. Exits 1
unless every redirect served is one click stored, counted row by row at the
end, and the link's total says the same.

    .venv/bin/python loadtest/bench_box.py [--rounds 3] [--duration 10] [--smoke]
"""

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard"), str(REPO / "loadtest")]

from bench_edge import WRK_SCRIPT, Nginx  # noqa: E402
from procstat import children, cpu_seconds  # noqa: E402

from devstack.redis import redis_calls  # noqa: E402
from devstack.supervised import SupervisedStack, wait_until  # noqa: E402
from loadtest.scenarios.faults import FaultRun  # noqa: E402
from loadtest.scenarios.visitors import request  # noqa: E402

SLUG = "box"
SERVED = 'slingshot_edge_requests_total{outcome="redirect"}'
PROGRAMS = ("edge", "redis", "importer", "postgres", "publisher", "dashboard")


class EdgeRun(NamedTuple):
    """One round's run of the stack's edge."""

    rps: float  # requests a second, as wrk counted them
    live: float  # clicks stored a second, from wrk's start until the last is in
    served: float  # redirects the edge served
    cpu: dict[str, float]  # CPU seconds of each program
    entries: int  # stream entries the edge's clicks went into
    left: float  # clicks not yet stored when wrk stopped
    drain: float  # seconds the importer took after wrk stopped to store the rest

    def print_round(self, number: int, ceiling: float) -> None:
        """The round's line, with the ceiling's run after it."""
        per_click = ", ".join(
            f"{name} {spent / self.served * 1e6:.1f}" for name, spent in self.cpu.items() if spent >= 0.05
        )
        print(
            f"  round {number}: edge {self.rps:,.0f} req/s, {self.served:,.0f} served, {self.left:,.0f} left to import "
            f"when wrk stopped, all stored {self.drain:.1f} s after; ceiling {ceiling:,.0f} req/s\n"
            f"    CPU µs a click: {per_click}; {self.served / max(self.entries, 1):.0f} clicks a stream entry",
            flush=True,
        )


class Started(NamedTuple):
    """What every round uses once the stack runs: its faults helper (the
    link's counts), its edge's port, and the file of paths wrk asks for."""

    faults: FaultRun
    edge_port: int
    paths: Path


def edge_served(port: int) -> float:
    time.sleep(0.3)  # every worker moves its counts to the shared dict every 0.1 s
    status, body = request(port, "/metrics")
    assert status == 200, body
    for line in body.decode().splitlines():
        if line.startswith(SERVED + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


class Box:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(tempfile.mkdtemp(prefix="slingshot-box-"))
        self.stack = SupervisedStack(
            self.root,
            env={
                "SLINGSHOT_ADMIN_USER": "box",
                "SLINGSHOT_ADMIN_PASSWORD": secrets.token_urlsafe(16),
                "EDGE_WORKERS": str(args.workers),
                **dict(setting.split("=", 1) for setting in args.stack_env),
            },
        )
        self.ceiling = None
        self.ok = False

    def xadds(self) -> int:
        """XADDs Redis has run: the edge's entries of clicks, and the
        publisher's link changes (none here once the link is made)."""
        import redis

        client = redis.Redis(port=int(self.stack.ports["REDIS_PORT"]), password=self.stack.secrets["REDIS_PASSWORD"])
        with client:
            return redis_calls(client, "xadd")

    def pids(self) -> dict[str, list[int]]:
        """Every process of each program (a master and its workers, a
        postmaster and its backends)."""
        found = {}
        for program in PROGRAMS:
            top = self.stack.master_pid(program) if program in ("edge", "dashboard") else None
            top = top or self.stack.info(program)["pid"]
            found[program] = [top, *children(top)]
        return found

    def cpu(self) -> dict[str, float]:
        return {program: cpu_seconds(pids) for program, pids in self.pids().items()}

    def wrk(self, port: int, paths: Path) -> tuple[float, float]:
        """(requests a second, the wall seconds wrk ran)."""
        started = time.monotonic()
        output = subprocess.run(
            ["wrk", "-t1", f"-c{self.args.connections}", f"-d{self.args.duration}s", "-s", str(WRK_SCRIPT)]
            + [f"http://127.0.0.1:{port}", "--", str(paths)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)), time.monotonic() - started

    def run(self) -> int:
        """Starts the stack and the ceiling, runs the rounds, reconciles; 0 if every redirect is one click stored."""
        a = self.args
        started = self.start()
        faults, edge_port, paths = started
        self.wrk(edge_port, paths)  # warm up: every worker has the link cached
        self.wrk(self.ceiling.ceiling_port, paths)
        faults.wait_import_lag_zero()
        ceilings, edges = [self.wrk(self.ceiling.ceiling_port, paths)[0]], []
        print(f"  ceiling {ceilings[-1]:,.0f} req/s", flush=True)
        for number in range(1, a.rounds + 1):
            edges.append(self.edge_round(started))
            ceilings.append(self.wrk(self.ceiling.ceiling_port, paths)[0])
            edges[-1].print_round(number, ceilings[-1])
        faults.wait_import_lag_zero()
        self.print_medians(ceilings, edges)
        self.reconcile(faults, edge_port)
        self.stack.interrupt()
        self.stack.wait_exit(timeout=180)
        return 0 if self.ok else 1

    def start(self) -> Started:
        """Starts the stack and the ceiling beside it, and makes the link wrk asks for."""
        a = self.args
        print(f"starting `make run` in {self.root} (ports {self.stack.ports})", flush=True)
        self.stack.start()
        faults = FaultRun(self.stack, admin="box", log=lambda line: print(line, flush=True))
        self.ceiling = Nginx(
            self.root,
            {key: self.stack.secrets[key] for key in ("REDIS_HOST", "REDIS_PORT", "REDIS_PASSWORD")},
            a.workers,
            with_ceiling=True,
            pin=False,
            repo=REPO,
        )
        faults.create_link(SLUG)
        edge_port = self.stack.ports["EDGE_PORT"]
        wait_until(lambda: request(edge_port, f"/{SLUG}")[0] == 302, timeout=60, what=f"/{SLUG} to redirect")
        paths = self.root / "paths.txt"
        paths.write_text(f"/{SLUG}\n")
        print(
            f"wrk -t1 -c{a.connections} -d{a.duration}s (the client script of make bench); the stack's edge and the "
            f"ceiling with {a.workers} workers each; {a.rounds} rounds of ceiling, edge; {os.cpu_count()} CPUs"
            + (f"; {' '.join(a.stack_env)}" if a.stack_env else ""),
            flush=True,
        )
        return Started(faults, edge_port, paths)

    def edge_round(self, started: Started) -> EdgeRun:
        """One run of wrk on the stack's edge, until the importer has stored every click it served."""
        faults, edge_port, paths = started
        served_before = edge_served(edge_port)
        stored_before = faults.counted(SLUG)
        cpu_before, xadds_before = self.cpu(), self.xadds()
        rps, seconds = self.wrk(edge_port, paths)
        ended = time.monotonic()
        served = edge_served(edge_port) - served_before
        left = served - (faults.counted(SLUG) - stored_before)
        wait_until(
            lambda: faults.counted(SLUG) - stored_before >= served,
            timeout=600,
            what="every click stored",
            interval=0.2,
        )
        drain = max(0.0, time.monotonic() - ended - 0.5)  # less the metrics' and the count's own wait
        cpu = {name: seconds_ - cpu_before[name] for name, seconds_ in self.cpu().items()}
        entries = self.xadds() - xadds_before
        return EdgeRun(rps, served / (seconds + drain), served, cpu, entries, left, drain)

    def print_medians(self, ceilings: list[float], edges: list[EdgeRun]) -> None:
        """The rounds' medians: the edge's and the stored clicks' ratios to the ceiling, CPU a click."""
        ratios = [run.rps / ((ceilings[i] + ceilings[i + 1]) / 2) for i, run in enumerate(edges)]
        live_ratios = [run.live / ((ceilings[i] + ceilings[i + 1]) / 2) for i, run in enumerate(edges)]
        cpu_per_click = {name: median(run.cpu[name] / run.served * 1e6 for run in edges) for name in PROGRAMS}
        per_entry = median(run.served / max(run.entries, 1) for run in edges)
        print(
            f"\nmedians over {self.args.rounds} rounds: edge req/s / ceiling {median(ratios):.2f} "
            f"(per round {', '.join(f'{r:.2f}' for r in ratios)}); stored live / ceiling {median(live_ratios):.2f} "
            f"(per round {', '.join(f'{r:.2f}' for r in live_ratios)}); ceiling {median(ceilings):,.0f} req/s"
        )
        print(
            "CPU µs a click (median): "
            + ", ".join(f"{name} {spent:.1f}" for name, spent in cpu_per_click.items() if spent >= 0.05)
            + f"; clicks a stream entry (median) {per_entry:.0f}"
        )

    def reconcile(self, faults: FaultRun, edge_port: int) -> None:
        """Every redirect served is one click stored, row by row and by the link's total; sets self.ok."""
        total_served = edge_served(edge_port)
        stored, counted = faults.stored()[SLUG], faults.counted(SLUG)
        accounting = faults.settled_accounting()
        print(
            f"reconciled: {stored}/{total_served:.0f}; the link's all-time total {counted}; accounting (served - stored) "
            f"by hour: {json.dumps(accounting)}"
        )
        self.ok = stored == counted == total_served and set(accounting.values()) == {0}
        print("OK" if self.ok else "FAILED", flush=True)

    def close(self) -> None:
        if self.ceiling:
            self.ceiling.stop()
        self.stack.cleanup(remove=self.ok)
        if not self.ok:
            print(f"the stack's console and logs are kept in {self.root}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds each wrk run lasts")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2, help="nginx workers of the edge and of the ceiling")
    parser.add_argument(
        "--stack-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the stack, e.g. CLICK_IMPORT_BATCH_ENTRIES=1000",
    )
    parser.add_argument("--smoke", action="store_true", help="one round of 1 s: that the script works (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.duration, args.connections = 1, 1, 4
    if not shutil.which("wrk"):
        print("wrk is not installed (make setup installs it)", file=sys.stderr)
        return 2
    box = Box(args)
    try:
        return box.run()
    finally:
        box.close()


if __name__ == "__main__":
    sys.exit(main())

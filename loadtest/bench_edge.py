"""`make bench`: the edge against a bare-nginx ceiling, side by side.

Starts its own Redis and one nginx (the top-level nginx.conf rendered by
devstack, plus a ceiling server that answers `return 302` with no Lua), then
runs wrk with the same threads, connections, duration and client script for
each case:

  a  ceiling: the same nginx and workers, `return 302`, no Lua
  b  cached redirects, click logging on
  c  every request a cache miss served from Redis (many slugs, tiny lrucache)
  d  unknown slugs (negatively cached; each visit is an orphan click)
  e  for reference, the floor of any Lua handler: content_by_lua that only
     calls ngx.redirect to a constant URL, on the ceiling's server
  f  TLS ceiling: the same nginx and workers, `return 302` over HTTPS with
     the edge's default certificate, keep-alive connections, no Lua
  g  (b) over HTTPS with keep-alive: the edge's TLS server, its certificate
     chosen by edge/slingshot/certs.lua at each handshake; its ratio is
     against (f)
  h  a cached link with five redirect rules whose last one matches: one
     condition each of device, language, country (a geoip2 lookup, where the
     module is installed) and query that fail, then device=desktop, which
     wrk's Windows browser is; click logging on, the rule recorded
  i  (h) with Shlink 5's conditions: five rules of which four fail, by
     address (an IPv4 wildcard, an IPv6 range), browser (firefox) and date
     (before 2020), then one whose address range, browser (chrome, which
     wrk's is) and date window (after 2020) all hold
  n  (b) with no click: the same link on an edge whose clicks module has
     its recording taken out (loadtest/noclick/), so that the edge writes
     no click; (b) less (n), round by round, is what the click itself costs

For each it prints requests/s, p50 and p99 latency, the ratio to its
ceiling ((f) for (g), else (a)), the ratio to the Lua floor (e) when (e)
runs too (each round's ratio over (e)'s), and the server CPU time per
request (nginx master and workers plus Redis, from /proc before and after). The cases run
in rounds, each case between two runs of its ceiling (a, b, a, c, a, d, a, e,
a, h, f, g, then the next round's a, and a last f; `--cases` picks some),
and the medians are reported, each ratio against the mean of the two
ceiling runs around it: load from elsewhere on the machine, which on a shared VM comes
and goes within seconds, hits both sides of a ratio alike. Checks
that every click of (b) reached the stream: clicks in the stream == redirects
served (the edge's own counter; wrk does not count the responses still in
flight when it stops). Takes about five minutes.

`--base DIR` measures another checkout (its nginx.conf and edge/, say main's
in a git worktree) beside this one in the same run: a second edge (and a
second tiny-cache edge for (c)) runs it, and each case but (e) runs on both
in every round, the other checkout's as the case's capital letter (a d a D
...), each between two runs of the ceiling.
"""

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import NamedTuple

import orjson
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# The nginx under test, a run of wrk and what it cost, the cases and the tables:
# each a module of its own beside this script. Tests and bench_box.py import
# CEILING_TARGET, without_clicks, WRK_SCRIPT and Nginx from here.
from edgebench_nginx import CEILING_TARGET, LOOKUPS, LUA_FLOOR_PATH, SERVED, Nginx
from edgebench_nginx import without_clicks as without_clicks
from edgebench_report import BASE_CASES, CEILINGS, LABELS, ceiling_of, pair_with_ceilings, report
from edgebench_wrk import WRK_SCRIPT as WRK_SCRIPT
from edgebench_wrk import Result, Wrk

import devstack
from devstack.nginx import nginx_binary
from devstack.throwaway import ThrowawayStack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "edge" / "t"))
from click_stream import decode_clicks

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dashboard"))
from slingshot.contract import CLICKS_STREAM, link_key

# Case (h): every rule's conditions are read; only the last rule matches.
FIVE_RULES = [
    {"url": "https://example.com/ios", "conditions": [{"type": "device", "value": "ios"}]},
    {"url": "https://example.com/de", "conditions": [{"type": "language", "value": "de"}]},
    {"url": "https://example.com/nl", "conditions": [{"type": "country", "value": "NL"}]},
    {"url": "https://example.com/spring", "conditions": [{"type": "query", "key": "campaign", "value": "spring"}]},
    {"url": CEILING_TARGET, "conditions": [{"type": "device", "value": "desktop"}]},
]
# Case (i): the same with address, browser and date conditions; wrk's requests come from 127.0.0.1.
FIVE_NEW_RULES = [
    {"url": "https://example.com/office", "conditions": [{"type": "ip", "value": "10.*.*.*"}]},
    {"url": "https://example.com/firefox", "conditions": [{"type": "browser", "value": "firefox"}]},
    {"url": "https://example.com/early", "conditions": [{"type": "before", "value": "2020-01-01T00:00:00Z"}]},
    {"url": "https://example.com/v6", "conditions": [{"type": "ip", "value": "2001:db8::/32"}]},
    {
        "url": CEILING_TARGET,
        "conditions": [
            {"type": "ip", "value": "127.0.0.0/8"},
            {"type": "browser", "value": "chrome"},
            {"type": "after", "value": "2020-01-01T00:00:00Z"},
        ],
    },
]


class Case(NamedTuple):
    """Where a case's requests go: its nginx, the port, the paths wrk asks for in turn, http or https."""

    edge: Nginx
    port: int
    paths: list[str]
    scheme: str


class Bench:
    """The benchmark's Redis and edges, the links they serve, and the rounds of wrk runs."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.stack = ThrowawayStack(prefix="slingshot-bench-edge-")
        self.root = self.stack.root
        self.redis_process = self.stack.start_redis()
        self.redis = redis.Redis(port=self.stack.redis_port, password=self.stack.redis_password)
        self.wrk = Wrk(args, self.root, self.redis_process.pid)
        self.edges = []

    def start_edge(
        self, env: dict[str, str], *, with_ceiling: bool = False, repo: Path = devstack.REPO, clicks: bool = True
    ) -> Nginx:
        chosen = dict(item.split("=", 1) for item in self.args.edge_env)
        env = {
            "REDIS_HOST": "127.0.0.1",
            "REDIS_PORT": str(self.stack.redis_port),
            "REDIS_PASSWORD": self.stack.redis_password,
            **chosen,
            **env,
        }
        edge = Nginx(
            self.root, env, self.args.workers, with_ceiling=with_ceiling, pin=self.args.pin, repo=repo, clicks=clicks
        )
        self.edges.append(edge)
        return edge

    def clicks_in_stream(self) -> tuple[int, int]:
        total, ids = 0, set()
        last = "-"
        while True:
            entries = self.redis.xrange(CLICKS_STREAM, min=last, count=5000)
            if last != "-":
                entries = entries[1:]
            if not entries:
                return total, len(ids)
            for _, fields in entries:
                clicks = decode_clicks(fields)
                total += len(clicks)
                ids.update(click["id"] for click in clicks)
            last = entries[-1][0].decode()

    def run(self) -> int:
        """Sets up the links and the edges, then measures every case in rounds."""
        a = self.args
        # Each case after a run of its ceiling (a b a c a d a e a h f g | a b ...),
        # and the ceilings once more at the end: every case between two of its ceilings.
        measured = [
            case for key in a.cases for case in (key, key.upper()) if case == key or (a.base and key in BASE_CASES)
        ]
        round_order = "".join(ceiling_of(key) + key for key in measured)
        trailing = sorted({ceiling_of(key) for key in measured})
        self.print_setup(round_order)
        many = self.store_links()
        return self.measure(self.start_cases(many), round_order, trailing)

    def print_setup(self, round_order: str) -> None:
        """The line that says what runs, and how, before the figures."""
        a = self.args
        print(
            f"nginx {nginx_binary()} with {a.workers} workers; per case wrk -t{a.threads} "
            f"-c{a.connections} -d{a.duration}s, the same client script; {a.rounds} rounds of {' '.join(round_order)}; "
            f"{os.cpu_count()} CPUs"
            + (
                f"; nginx workers pinned one per CPU (worker_cpu_affinity auto), wrk to CPU {a.wrk_cpu}"
                if a.pin
                else "; nothing pinned"
            )
            + (f"; {' '.join(a.edge_env)}" if a.edge_env else "")
            + (f"; capital letters: {a.base}" if a.base else "")
            + "\n"
        )

    def store_links(self) -> list[str]:
        """Every case's links in Redis; returns the slugs of (c)'s many links."""
        self.redis.set(link_key("bench"), orjson.dumps({"id": 1, "url": CEILING_TARGET, "status": 302, "active": True}))
        self.redis.set(
            link_key("bench-rules"),
            orjson.dumps({"id": 0x7FFF_FFFF, "url": "https://example.com/", "status": 302, "rules": FIVE_RULES}),
        )
        self.redis.set(
            link_key("bench-new-rules"),
            orjson.dumps({"id": 0x7FFF_FFFD, "url": "https://example.com/", "status": 302, "rules": FIVE_NEW_RULES}),
        )
        # Case (l): each visit INCRs the link's counter on the primary; a limit never reached.
        self.redis.set(
            link_key("bench-limited"),
            orjson.dumps({"id": 0x7FFF_FFFE, "url": CEILING_TARGET, "status": 302, "max_visits": 10**15}),
        )
        many = [f"m{i:06d}" for i in range(self.args.miss_slugs)]
        pipe = self.redis.pipeline(transaction=False)
        for number, slug in enumerate(many, start=2):
            pipe.set(link_key(slug), orjson.dumps({"id": number, "url": CEILING_TARGET, "status": 302, "active": True}))
        pipe.execute()
        return many

    def start_cases(self, many: list[str]) -> dict[str, Case]:
        """Starts the edges; returns every case by its letter (--base's by its capital)."""
        a = self.args
        main = self.start_edge({}, with_ceiling=True)
        cases = self.cases(main, self.edges_for(a.cases, devstack.REPO), many)
        if a.base:
            base = self.start_edge({}, repo=a.base)
            for key, case in self.cases(base, self.edges_for(a.cases, a.base), many).items():
                if key in BASE_CASES:
                    cases[key.upper()] = case
        return cases

    def edges_for(self, keys: str, repo: Path) -> dict[str, Nginx]:
        """The edges of the cases that need one of their own: (c)'s with a
        tiny cache, (n)'s with no clicks."""
        edges = {}
        if "c" in keys:
            edges["c"] = self.start_edge({"EDGE_CACHE_SIZE": str(self.args.tiny_cache)}, repo=repo)
        if "n" in keys:
            edges["n"] = self.start_edge({}, repo=repo, clicks=False)
        return edges

    def cases(self, main: Nginx, own: dict[str, Nginx], many: list[str]) -> dict[str, Case]:
        a = self.args
        tiny, quiet = own.get("c", main), own.get("n", main)
        return {
            "a": Case(main, main.ceiling_port, ["/bench"], "http"),
            "b": Case(main, main.port, ["/bench"], "http"),
            "c": Case(tiny, tiny.port, ["/" + slug for slug in many], "http"),
            "d": Case(main, main.port, [f"/u{i:06d}" for i in range(a.unknown_slugs)], "http"),
            "e": Case(main, main.ceiling_port, [LUA_FLOOR_PATH], "http"),
            "f": Case(main, main.ceiling_tls_port, ["/bench"], "https"),
            "g": Case(main, main.tls_port, ["/bench"], "https"),
            "h": Case(main, main.port, ["/bench-rules"], "http"),
            "i": Case(main, main.port, ["/bench-new-rules"], "http"),
            "l": Case(main, main.port, ["/bench-limited"], "http"),
            "n": Case(quiet, quiet.port, ["/bench"], "http"),
        }

    def measure(self, cases: dict[str, Case], round_order: str, trailing: list[str]) -> int:
        """Warms every case up, runs the rounds, prints the report; 0 if every click was in the stream."""
        a = self.args
        chosen = list(dict.fromkeys(round_order))
        for key in chosen:
            case = cases[key]
            self.wrk.run(f"{key}-warmup", case.port, case.paths, a.warmup, case.edge.pids(), case.scheme)
        order = [key for _ in range(a.rounds) for key in round_order] + trailing
        runs, clicks_ok = [], True
        for index, key in enumerate(order):
            result, ok = self.run_case(index // len(round_order) + 1, key, cases[key])
            runs.append(result)
            clicks_ok = clicks_ok and ok
        edges = {id(case.edge): case.edge for case in cases.values()}.values()
        dropped = sum(edge.metrics()["slingshot_edge_clicks_dropped_total"] for edge in edges)
        clicks_ok = clicks_ok and dropped == 0
        report(pair_with_ceilings(order, runs, chosen, len(trailing)), a, clicks_ok)
        return 0 if clicks_ok else 1

    def run_case(self, number: int, key: str, case: Case) -> tuple[Result, bool]:
        """One run of a case in round `number`, the stream emptied first; for
        (b), whether each redirect served is one click in the stream."""
        before = case.edge.drain()
        self.redis.delete(CLICKS_STREAM)
        result = self.wrk.run(key, case.port, case.paths, self.args.duration, case.edge.pids(), case.scheme)
        after = case.edge.drain()
        ok = True
        if key in ("b", "B"):
            served = after[SERVED] - before[SERVED]
            clicks, distinct = self.clicks_in_stream()
            ok = clicks == distinct == served
            print(
                f"round {number} ({key}): {served:.0f} redirects served, wrk counted {result.requests}; "
                f"{clicks} clicks in the stream, {distinct} distinct ids: {'OK' if ok else 'MISMATCH'}"
            )
        if key in ("c", "C"):
            lookups = after[LOOKUPS] - before[LOOKUPS]
            print(
                f"round {number} ({key}): {lookups:.0f} slugs looked up in Redis for the "
                f"{result.requests} responses wrk counted (the tiny cache holds a few)"
            )
        return result, ok

    def close(self) -> None:
        for edge in self.edges:
            edge.stop()
        self.stack.cleanup()


def argument_parser() -> argparse.ArgumentParser:
    """bench_edge.py's options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--miss-slugs", type=int, default=100_000)
    parser.add_argument("--tiny-cache", type=int, default=1000)
    parser.add_argument("--unknown-slugs", type=int, default=10_000)
    parser.add_argument(
        "--cases",
        default="bcdehg",
        help="which cases to run beside their ceilings (a; f for g), in this order (default bcdehg; e.g. --cases h; "
        "i, (h) with address, browser and date rules, l, a link with a visit limit, and n, (b) with no click, "
        "only when asked for)",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="pin the nginx workers one per CPU (worker_cpu_affinity auto) and wrk to --wrk-cpu; "
        "on 2 CPUs this lowers every case's throughput, the ceiling's too",
    )
    parser.add_argument("--wrk-cpu", type=int, default=0, help="the CPU wrk is pinned to")
    parser.add_argument(
        "--base",
        type=Path,
        metavar="DIR",
        help="another checkout (e.g. a git worktree of main) whose edge runs every case but e beside this one's, "
        "as the case's capital letter, in the same rounds",
    )
    parser.add_argument(
        "--no-perf", dest="perf", action="store_false", help="skip counting nginx's instructions with perf stat"
    )
    parser.add_argument(
        "--where",
        action="store_true",
        help="also break each case's nginx CPU a request down by where it went (perf record; needs perf, "
        "Debian: linux-perf): nginx, LuaJIT, libc, the kernel by system call, page faults",
    )
    parser.add_argument(
        "--edge-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an edge setting for every case, e.g. EDGE_CLICKS_PER_ENTRY=500",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="case (b) for one round of 1 s: that the script works (make test)"
    )
    return parser


def main() -> int:
    parser = argument_parser()
    args = parser.parse_args()
    if args.smoke:
        args.cases, args.rounds, args.duration, args.warmup, args.connections = "b", 1, 1, 1, 8
        args.miss_slugs, args.unknown_slugs, args.perf = 100, 10, False
    if not args.cases or not set(args.cases) <= set(LABELS) - CEILINGS:
        parser.error(f"--cases takes letters of {''.join(sorted(set(LABELS) - CEILINGS))}")
    if args.base and not (args.base / "edge" / "slingshot" / "edge.lua").exists():
        parser.error(f"--base {args.base} is not a checkout of this repository")
    if not shutil.which("wrk"):
        print("wrk is not installed (make setup installs it)", file=sys.stderr)
        return 2
    if args.perf and not shutil.which("perf"):
        print("perf is not installed (Debian: linux-perf): no instruction counts")
        args.perf = False
    if args.where and not shutil.which("perf"):
        parser.error("--where needs perf (Debian: apt-get install linux-perf)")
    bench = Bench(args)
    try:
        return bench.run()
    finally:
        bench.close()


if __name__ == "__main__":
    sys.exit(main())

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
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import orjson
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from cpuwhere import Recorder, perf_off, perf_on  # noqa: E402
from procstat import children, cpu_seconds  # noqa: E402

import devstack  # noqa: E402
from devstack.edge import edge_command, render_edge_conf
from devstack.net import free_port, wait_for_port
from devstack.nginx import nginx_binary
from devstack.throwaway import ThrowawayStack  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "edge" / "t"))
from click_stream import decode_clicks  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dashboard"))
from slingshot.contract import CLICKS_STREAM, link_key  # noqa: E402

HERE = Path(__file__).resolve().parent
WRK_SCRIPT = HERE / "bench_edge.wrk.lua"
TARGETS = {"b": 0.90, "c": 0.50, "d": 0.85}
CEILING_TARGET = "https://example.com/landing"
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
LUA_FLOOR_PATH = "/lua-floor"
# Case (n)'s stand-in for the edge's clicks module, which records nothing.
NO_CLICKS = HERE / "noclick"
# The ceiling each case is measured against; a ceiling is its own.
CEILING_OF = {"g": "f"}
CEILINGS = {"a", "f"}


@dataclass
class Result:
    name: str
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    nginx_us: float
    redis_us: float
    instructions: float | None  # nginx's, per request, user + kernel; None without perf
    where: dict[str, float] | None = None  # nginx's CPU by where it went, shares (--where)


def mean_of(first: Result, second: Result) -> Result:
    """The ceiling a case is measured against: the mean of the runs around it."""
    counts = (first.instructions, second.instructions)
    return Result(
        name=first.name,
        requests=(first.requests + second.requests) // 2,
        rps=(first.rps + second.rps) / 2,
        p50_ms=(first.p50_ms + second.p50_ms) / 2,
        p99_ms=(first.p99_ms + second.p99_ms) / 2,
        nginx_us=(first.nginx_us + second.nginx_us) / 2,
        redis_us=(first.redis_us + second.redis_us) / 2,
        instructions=None if None in counts else sum(counts) / 2,
    )


def millis(text: str) -> float:
    number, unit = re.match(r"([\d.]+)(us|ms|s|m)$", text).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def without_clicks(conf: str) -> str:
    """nginx.conf (as render_edge_conf makes it) for an edge that serves as
    it does and records no click: NO_CLICKS first on its Lua path."""
    line = 'lua_package_path "$prefix/edge/?.lua;;";'
    if conf.count(line) != 1:
        raise ValueError(f"nginx.conf has not one {line!r}")
    return conf.replace(line, f'lua_package_path "{NO_CLICKS}/?.lua;$prefix/edge/?.lua;;";')


class Nginx:
    """One nginx running the production nginx.conf as devstack renders it,
    plus (with_ceiling) a server on its own port that only does `return 302`,
    and at LUA_FLOOR_PATH only an ngx.redirect from Lua."""

    def __init__(
        self,
        root: Path,
        env: dict[str, str],
        workers: int,
        *,
        with_ceiling: bool,
        pin: bool,
        repo: Path,
        clicks: bool = True,
    ) -> None:
        prefix = root / f"nginx-{len(list(root.glob('nginx-*')))}"
        self.port, self.ceiling_port = free_port(), free_port()
        self.tls_port, self.ceiling_tls_port = free_port(), free_port()
        conf_path = render_edge_conf(prefix, self.port, tls_port=self.tls_port, repo=repo)
        if not clicks:
            conf_path.write_text(without_clicks(conf_path.read_text()))
        if with_ceiling:
            conf = conf_path.read_text()
            ceiling = (
                "    server {\n"
                f"        listen 127.0.0.1:{self.ceiling_port} reuseport;\n"
                '        add_header Cache-Control "private, no-store" always;\n'
                "        add_header X-Content-Type-Options nosniff always;\n"
                f"        location / {{ return 302 {CEILING_TARGET}; }}\n"
                f"        location = {LUA_FLOOR_PATH} {{\n"
                f'            content_by_lua_block {{ ngx.redirect("{CEILING_TARGET}", 302) }}\n'
                "        }\n"
                "    }\n"
                "    server {\n"
                f"        listen 127.0.0.1:{self.ceiling_tls_port} ssl reuseport;\n"
                "        ssl_certificate certs/default.crt;\n"
                "        ssl_certificate_key certs/default.key;\n"
                "        ssl_protocols TLSv1.2 TLSv1.3;\n"
                '        add_header Cache-Control "private, no-store" always;\n'
                "        add_header X-Content-Type-Options nosniff always;\n"
                f"        location / {{ return 302 {CEILING_TARGET}; }}\n"
                "    }\n"
            )
            end = conf.rstrip().rfind("}")
            conf_path.write_text(conf[:end] + ceiling + conf[end:])
        command = edge_command(prefix, workers=workers)
        if pin:
            command[-1] += " worker_cpu_affinity auto;"
        self.process = subprocess.Popen(
            command,
            env={**os.environ, **env},
            stdout=open(prefix / "stderr.log", "ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_port(self.port, process=self.process)
        if with_ceiling:
            wait_for_port(self.ceiling_port, process=self.process)
            wait_for_port(self.ceiling_tls_port, process=self.process)

    def pids(self) -> list[int]:
        return [self.process.pid, *children(self.process.pid)]

    def metrics(self) -> dict[str, float]:
        time.sleep(0.3)  # workers move their counters to the shared dict every 0.1 s
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics") as response:
            text = response.read().decode()
        return {
            line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line and not line.startswith("#")
        }

    def drain(self) -> dict[str, float]:
        """Waits until every worker has flushed its clicks; returns the metrics."""
        deadline = time.monotonic() + 30
        while (values := self.metrics()).get("slingshot_edge_click_buffer_depth", 0) > 0:
            if time.monotonic() > deadline:
                raise TimeoutError("click buffers did not drain")
        return values

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            self.process.wait(timeout=30)


SERVED = 'slingshot_edge_requests_total{outcome="redirect"}'
LOOKUPS = "slingshot_edge_redis_lookups_total"
LABELS = {
    "a": "a ceiling: return 302, no Lua",
    "b": "b cached redirect + click",
    "c": "c cache miss, Redis GET + click",
    "d": "d unknown slug: 404 + orphan",
    "e": "e Lua floor: ngx.redirect only",
    "h": "h cached, 5 rules, last matches",
    "i": "i (h) by ip, browser, date",
    "l": "l cached, visit limit: INCR + click",
    "n": "n (b) with no click",
    "f": "f TLS ceiling: return 302",
    "g": "g TLS cached redirect + click",
}
# Cases measured again on --base's checkout, under their capital letters.
BASE_CASES = set(LABELS) - CEILINGS - {"e"}


def label(key: str) -> str:
    if key.isupper():
        return f"{key} {LABELS[key.lower()][2:]}"[:25] + " (--base)"
    return LABELS[key]


def ceiling_of(key: str) -> str:
    return CEILING_OF.get(key.lower(), "a")


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.stack = ThrowawayStack(prefix="slingshot-bench-edge-")
        self.root = self.stack.root
        self.redis_process = self.stack.start_redis()
        self.redis = redis.Redis(port=self.stack.redis_port, password=self.stack.redis_password)
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

    def wrk(
        self, name: str, port: int, paths: list[str], duration: int, pids: list[int], scheme: str = "http"
    ) -> Result:
        path_file = self.root / f"paths-{name}.txt"
        path_file.write_text("\n".join(paths) + "\n")
        redis_pids = [self.redis_process.pid]
        nginx_before, redis_before = cpu_seconds(pids), cpu_seconds(redis_pids)
        pin = ["taskset", "-c", str(self.args.wrk_cpu)] if self.args.pin else []
        counter = self.start_perf(pids)
        warmup = name.endswith("-warmup")
        recorder = Recorder(self.root / f"where-{name}.data", pids) if self.args.where and not warmup else None
        output = subprocess.run(
            [
                *pin,
                "wrk",
                "-t",
                str(self.args.threads),
                "-c",
                str(self.args.connections),
                "-d",
                f"{duration}s",
                "--latency",
                "-s",
                str(WRK_SCRIPT),
                f"{scheme}://127.0.0.1:{port}",
                "--",
                str(path_file),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        nginx_cpu = cpu_seconds(pids) - nginx_before
        redis_cpu = cpu_seconds(redis_pids) - redis_before
        instructions = self.stop_perf(counter)
        where = recorder.stop() if recorder else None
        requests = int(re.search(r"(\d+) requests in", output).group(1))
        errors = re.search(r"Socket errors: (.*)", output)
        if errors:
            print(f"  wrk socket errors in {name}: {errors.group(1)}")
        try:
            result = self.parse(name, output, requests, nginx_cpu, redis_cpu, instructions)
            result.where = where
            return result
        except (AttributeError, ValueError) as error:
            raise RuntimeError(f"cannot read wrk's output for {name}:\n{output}") from error

    @staticmethod
    def parse(
        name: str, output: str, requests: int, nginx_cpu: float, redis_cpu: float, instructions: float | None
    ) -> Result:
        return Result(
            name=name,
            requests=requests,
            rps=float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
            p50_ms=millis(re.search(r"^\s+50%\s+(\S+)", output, re.M).group(1)),
            p99_ms=millis(re.search(r"^\s+99%\s+(\S+)", output, re.M).group(1)),
            nginx_us=nginx_cpu / requests * 1e6,
            redis_us=redis_cpu / requests * 1e6,
            instructions=None if instructions is None else instructions / requests,
        )

    def start_perf(self, pids: list[int]) -> subprocess.Popen | None:
        """Counts the instructions nginx runs (`perf stat`), if perf can here:
        unlike CPU time, the count hardly moves with what else shares the cores."""
        if not self.args.perf:
            return None
        return perf_on(
            pids, "stat", "-x", ",", "-e", "instructions:u,instructions:k", "-o", str(self.root / "perf.csv")
        )

    def stop_perf(self, counter: subprocess.Popen | None) -> float | None:
        if counter is None:
            return None
        perf_off(counter)
        total = 0
        for line in (self.root / "perf.csv").read_text().splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2].startswith("instructions"):
                if not fields[0].isdigit():  # "<not supported>": no counters in this VM
                    self.args.perf = False
                    return None
                total += int(fields[0])
        return total

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
        a = self.args
        # Each case after a run of its ceiling (a b a c a d a e a h f g | a b ...),
        # and the ceilings once more at the end: every case between two of its ceilings.
        measured = [
            case for key in a.cases for case in (key, key.upper()) if case == key or (a.base and key in BASE_CASES)
        ]
        round_order = "".join(ceiling_of(key) + key for key in measured)
        trailing = sorted({ceiling_of(key) for key in measured})
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
        many = [f"m{i:06d}" for i in range(a.miss_slugs)]
        pipe = self.redis.pipeline(transaction=False)
        for number, slug in enumerate(many, start=2):
            pipe.set(link_key(slug), orjson.dumps({"id": number, "url": CEILING_TARGET, "status": 302, "active": True}))
        pipe.execute()

        main = self.start_edge({}, with_ceiling=True)
        cases = self.cases(main, self.edges_for(a.cases, devstack.REPO), many)
        if a.base:
            base = self.start_edge({}, repo=a.base)
            for key, case in self.cases(base, self.edges_for(a.cases, a.base), many).items():
                if key in BASE_CASES:
                    cases[key.upper()] = case
        return self.measure(cases, round_order, trailing)

    def edges_for(self, keys: str, repo: Path) -> dict[str, Nginx]:
        """The edges of the cases that need one of their own: (c)'s with a
        tiny cache, (n)'s with no clicks."""
        edges = {}
        if "c" in keys:
            edges["c"] = self.start_edge({"EDGE_CACHE_SIZE": str(self.args.tiny_cache)}, repo=repo)
        if "n" in keys:
            edges["n"] = self.start_edge({}, repo=repo, clicks=False)
        return edges

    def cases(
        self, main: Nginx, own: dict[str, Nginx], many: list[str]
    ) -> dict[str, tuple[Nginx, int, list[str], str]]:
        a = self.args
        tiny, quiet = own.get("c", main), own.get("n", main)
        return {
            "a": (main, main.ceiling_port, ["/bench"], "http"),
            "b": (main, main.port, ["/bench"], "http"),
            "c": (tiny, tiny.port, ["/" + slug for slug in many], "http"),
            "d": (main, main.port, [f"/u{i:06d}" for i in range(a.unknown_slugs)], "http"),
            "e": (main, main.ceiling_port, [LUA_FLOOR_PATH], "http"),
            "f": (main, main.ceiling_tls_port, ["/bench"], "https"),
            "g": (main, main.tls_port, ["/bench"], "https"),
            "h": (main, main.port, ["/bench-rules"], "http"),
            "i": (main, main.port, ["/bench-new-rules"], "http"),
            "l": (main, main.port, ["/bench-limited"], "http"),
            "n": (quiet, quiet.port, ["/bench"], "http"),
        }

    def measure(self, cases: dict, round_order: str, trailing: list[str]) -> int:
        a = self.args
        chosen = list(dict.fromkeys(round_order))
        for key in chosen:
            edge, port, paths, scheme = cases[key]
            self.wrk(f"{key}-warmup", port, paths, a.warmup, edge.pids(), scheme)
        order = [key for _ in range(a.rounds) for key in round_order] + trailing
        runs, clicks_ok = [], True
        for index, key in enumerate(order):
            number = index // len(round_order) + 1
            edge, port, paths, scheme = cases[key]
            before = edge.drain()
            self.redis.delete(CLICKS_STREAM)
            result = self.wrk(key, port, paths, a.duration, edge.pids(), scheme)
            runs.append(result)
            after = edge.drain()
            if key in ("b", "B"):
                served = after[SERVED] - before[SERVED]
                clicks, distinct = self.clicks_in_stream()
                ok = clicks == distinct == served
                clicks_ok = clicks_ok and ok
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
        edges = {id(edge): edge for edge, *_ in cases.values()}.values()
        dropped = sum(edge.metrics()["slingshot_edge_clicks_dropped_total"] for edge in edges)
        clicks_ok = clicks_ok and dropped == 0

        # Each run with its ceiling: the mean of the nearest runs of its
        # ceiling either side of it; a ceiling run (but the last a) is its own.
        by_case: dict[str, list[tuple[Result, Result]]] = {key: [] for key in chosen}
        for index, key in enumerate(order):
            if key not in CEILINGS:
                ceiling = ceiling_of(key)
                before = max(i for i in range(index) if order[i] == ceiling)
                after = min(i for i in range(index + 1, len(order)) if order[i] == ceiling)
                by_case[key].append((runs[index], mean_of(runs[before], runs[after])))
            elif index < len(order) - len(trailing):
                by_case[key].append((runs[index], runs[index]))

        print(
            f"\nmedians over {a.rounds} rounds; ratio = req/s over the mean req/s of the ceiling runs "
            "just before and after" + ("; vs e = the ratio over (e)'s in the same round" if "e" in chosen else "")
        )
        print(
            f"{'case':<34} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'ratio':>6} {'target':>7} {'vs e':>5} "
            f"{'CPU us/req':>10} {'(nginx':>7} {'redis)':>7} {'CPU ratio':>9}"
            + (f" {'instr/req':>9} {'ratio':>6}" if a.perf else "")
        )
        missed = []
        for key in chosen:
            measured = by_case[key]
            case_runs = [run for run, _ in measured]
            ratio = median(run.rps / ceiling.rps for run, ceiling in measured)
            # Against the Lua floor of the same round: the Lua a case adds.
            against_floor = ""
            if "e" in by_case and key not in CEILINGS and ceiling_of(key) == "a":
                against_floor = "{:.2f}".format(
                    median(
                        (run.rps / ceiling.rps) / (floor.rps / floor_ceiling.rps)
                        for (run, ceiling), (floor, floor_ceiling) in zip(measured, by_case["e"], strict=True)
                    )
                )
            target = TARGETS.get(key)
            mark = "" if target is None else f">={target:.2f}"
            if target is not None and ratio < target:
                missed.append(key)
            nginx_us, redis_us = median(r.nginx_us for r in case_runs), median(r.redis_us for r in case_runs)
            # The ceiling's CPU per request over this case's, round by round.
            cpu_ratio = median(
                (ceiling.nginx_us + ceiling.redis_us) / (run.nginx_us + run.redis_us) for run, ceiling in measured
            )
            instructions = ""
            if all(None not in (run.instructions, ceiling.instructions) for run, ceiling in measured):
                instructions = (
                    f" {median(r.instructions for r in case_runs):>9.0f} "
                    f"{median(ceiling.instructions / run.instructions for run, ceiling in measured):>6.2f}"
                )
            rps = median(r.rps for r in case_runs)
            print(
                f"{label(key):<34} {rps:>8.0f} {median(r.p50_ms for r in case_runs):>7.2f} "
                f"{median(r.p99_ms for r in case_runs):>7.2f} {ratio:>6.2f} {mark:>7} {against_floor:>5} "
                f"{median(r.nginx_us + r.redis_us for r in case_runs):>10.1f} {nginx_us:>7.1f} {redis_us:>7.1f}"
                f" {cpu_ratio:>9.2f}" + instructions
            )
            if key in CEILINGS:
                print("    per run: " + "  ".join(f"{run.rps:.0f}" for run in case_runs))
            else:
                print(
                    "    per round: "
                    + "  ".join(f"{run.rps:.0f} req/s ({run.rps / ceiling.rps:.2f})" for run, ceiling in measured)
                )
        print_click_cost({key: [run for run, _ in by_case[key]] for key in chosen})
        if "b" in a.cases:
            print("\nclicks check:", "OK, every click of (b) is in the stream once" if clicks_ok else "FAILED")
        print("targets:", "all met" if not missed else "missed by " + ", ".join(missed))
        if a.where:
            print_where({key: [run for run, _ in by_case[key]] for key in chosen})
        return 0 if clicks_ok else 1

    def close(self) -> None:
        for edge in self.edges:
            edge.stop()
        self.stack.cleanup()


def print_click_cost(runs: dict[str, list[Result]]) -> None:
    """What the click costs, where (n) ran beside (b): (b)'s nginx CPU a
    request less (n)'s, round by round (and --base's, (B) less (N))."""
    for with_click, without in (("b", "n"), ("B", "N")):
        if with_click in runs and without in runs:
            costs = [run.nginx_us - quiet.nginx_us for run, quiet in zip(runs[with_click], runs[without], strict=True)]
            print(
                f"the click's cost, ({with_click}) less ({without}): {median(costs):.2f} µs of nginx CPU a request "
                f"(rounds: {', '.join(f'{cost:.2f}' for cost in costs)})"
            )


def print_where(runs: dict[str, list[Result]]) -> None:
    """nginx's CPU a request by where it went (--where): medians over the
    rounds, the parts under 0.05 µs in every case summed as the rest; where
    (n) ran, the click's own part of each, (b) less (n) round by round."""
    runs = {key: [run for run in case_runs if run.where] for key, case_runs in runs.items()}
    runs = {key: case_runs for key, case_runs in runs.items() if case_runs}
    if not runs:
        print("\nwhere nginx's CPU went: perf recorded nothing (perf_event_paranoid, or no perf events in this VM)")
        return
    parts = {name for case_runs in runs.values() for run in case_runs for name in run.where}
    cost = {
        key: {name: median(run.where.get(name, 0.0) * run.nginx_us for run in case_runs) for name in parts}
        for key, case_runs in runs.items()
    }
    total = {key: median(run.nginx_us for run in case_runs) for key, case_runs in runs.items()}
    for with_click, without in (("b", "n"), ("B", "N")):
        if with_click in runs and without in runs and len(runs[with_click]) == len(runs[without]):
            pairs = list(zip(runs[with_click], runs[without], strict=True))
            column = f"{with_click}-{without}"
            cost[column] = {
                name: median(
                    run.where.get(name, 0.0) * run.nginx_us - quiet.where.get(name, 0.0) * quiet.nginx_us
                    for run, quiet in pairs
                )
                for name in parts
            }
            total[column] = median(run.nginx_us - quiet.nginx_us for run, quiet in pairs)
    shown = sorted(
        (name for name in parts if max(case[name] for case in cost.values()) >= 0.05),
        key=lambda name: -max(case[name] for case in cost.values()),
    )
    print(
        "\nwhere nginx's CPU went, µs a request (perf record -g, cpu-clock; medians over the rounds, "
        "perf's own cost included; the kernel by the call that entered it)"
    )
    print(f"{'part':<34}" + "".join(f"{key:>8}" for key in cost))
    for name in shown:
        print(f"{name:<34}" + "".join(f"{cost[key][name]:>8.2f}" for key in cost))
    rest = {key: sum(value for name, value in case.items() if name not in shown) for key, case in cost.items()}
    print(f"{'the rest':<34}" + "".join(f"{rest[key]:>8.2f}" for key in cost))
    print(f"{'all':<34}" + "".join(f"{total[key]:>8.2f}" for key in cost))


def main() -> int:
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

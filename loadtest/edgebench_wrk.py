"""One run of wrk in `make bench` (loadtest/bench_edge.py) and what it cost
the server: requests a second and latency from wrk's output, nginx's and
Redis's CPU time from /proc, and, where asked, nginx's instructions
(`perf stat`) and where its CPU went (`perf record`, loadtest/cpuwhere.py).
"""

import argparse
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cpuwhere import Recorder, perf_off, perf_on
from procstat import cpu_seconds

WRK_SCRIPT = Path(__file__).resolve().parent / "bench_edge.wrk.lua"


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


def parse(
    name: str, output: str, requests: int, nginx_cpu: float, redis_cpu: float, instructions: float | None
) -> Result:
    """A run's Result from wrk's output and the server's costs over it."""
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


class Wrk:
    """Runs wrk with the benchmark's threads, connections and client script,
    measuring the server around it; args are bench_edge.py's options (its
    --perf is turned off here when this machine has no counters)."""

    def __init__(self, args: argparse.Namespace, root: Path, redis_pid: int) -> None:
        self.args = args
        self.root = root
        self.redis_pid = redis_pid

    def run(
        self, name: str, port: int, paths: list[str], duration: int, pids: list[int], scheme: str = "http"
    ) -> Result:
        """One run of `duration` seconds on `paths`, nginx being `pids`."""
        path_file = self.root / f"paths-{name}.txt"
        path_file.write_text("\n".join(paths) + "\n")
        redis_pids = [self.redis_pid]
        nginx_before, redis_before = cpu_seconds(pids), cpu_seconds(redis_pids)
        counter = self.start_perf(pids)
        warmup = name.endswith("-warmup")
        recorder = Recorder(self.root / f"where-{name}.data", pids) if self.args.where and not warmup else None
        output = subprocess.run(
            self.command(duration, f"{scheme}://127.0.0.1:{port}", path_file),
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
            result = parse(name, output, requests, nginx_cpu, redis_cpu, instructions)
            result.where = where
            return result
        except (AttributeError, ValueError) as error:
            raise RuntimeError(f"cannot read wrk's output for {name}:\n{output}") from error

    def command(self, duration: int, url: str, path_file: Path) -> list[str]:
        """wrk's command line, pinned to --wrk-cpu with --pin."""
        pin = ["taskset", "-c", str(self.args.wrk_cpu)] if self.args.pin else []
        return [
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
            url,
            "--",
            str(path_file),
        ]

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

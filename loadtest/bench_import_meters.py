"""What the import benchmarks (bench_import.py, bench_import_clickhouse.py,
bench_importers.py) measure a run with: the CPU each program spent, when
each batch was committed, and the time each SQL statement took."""

import contextlib
import os
import time
from pathlib import Path

from procstat import CLOCK_TICKS, children, cpu_seconds

from devstack.throwaway import ThrowawayStack


class CpuMeter:
    """CPU seconds spent by PostgreSQL (every process, including backends
    that have exited, which their postmaster has reaped), Redis, and the
    importer (this process: its main thread and its reader thread), between
    start() and stop()."""

    def __init__(self, stack: ThrowawayStack):
        self.stack = stack

    def _postgres(self) -> float:
        postmaster = self.stack.postgres.pid
        fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
        reaped = (int(fields[13]) + int(fields[14])) / CLOCK_TICKS  # cutime, cstime
        return cpu_seconds([postmaster, *children(postmaster)]) + reaped

    def _sample(self) -> dict[str, float]:
        return {
            "postgres": self._postgres(),
            "redis": cpu_seconds([self.stack.redis.pid]),
            "importer": cpu_seconds([os.getpid()]),
        }

    def start(self) -> None:
        self.before, self.started = self._sample(), time.perf_counter()

    def stop(self) -> str:
        wall = time.perf_counter() - self.started
        after = self._sample()
        spent = {name: after[name] - self.before.get(name, 0.0) for name in after}
        self.spent = spent = {name: seconds for name, seconds in spent.items() if seconds >= 0.05}
        parts = ", ".join(f"{name} {seconds:.1f}" for name, seconds in sorted(spent.items(), key=lambda i: -i[1]))
        return f"CPU seconds over {wall:.1f}s: {parts}; {sum(spent.values()) / wall:.2f} of {os.cpu_count()} cores busy"

    def per_click(self, clicks: int) -> str:
        """What stop() measured, in CPU µs a click."""
        parts = ", ".join(f"{name} {seconds * 1e6 / clicks:.2f}" for name, seconds in self.spent.items())
        return f"CPU µs a click: {parts}; {sum(self.spent.values()) * 1e6 / clicks:.2f} in all"


class Commits:
    """When each batch was committed, and how many clicks it stored."""

    def __init__(self):
        self.times: list[float] = []
        self.stored: list[int] = []

    def append_result(self, result) -> None:
        self.times.append(time.perf_counter())
        self.stored.append(result.stored)

    def sustained(self) -> float:
        """Clicks stored per second between the first commit and the last."""
        if len(self.times) < 2:
            return float("nan")
        return sum(self.stored[1:]) / (self.times[-1] - self.times[0])


class StatementTimes:
    """Per SQL statement of Django's `connection` (its first 60 characters):
    wall seconds and the CPU seconds of the backend that ran it. Passed to
    `connection.execute_wrapper`, it times every statement sent through a
    cursor; `measuring` times anything else (a COPY)."""

    def __init__(self, connection):
        self.connection = connection
        self.spent: dict[str, list[float]] = {}

    @contextlib.contextmanager
    def measuring(self, sql: str):
        self.connection.ensure_connection()
        backend = [self.connection.connection.info.backend_pid]
        began, cpu_began = time.perf_counter(), cpu_seconds(backend)
        try:
            yield
        finally:
            spent = self.spent.setdefault(" ".join(sql.split())[:60], [0.0, 0.0])
            spent[0] += time.perf_counter() - began
            spent[1] += cpu_seconds(backend) - cpu_began

    def __call__(self, execute, sql, params, many, context):
        with self.measuring(sql):
            return execute(sql, params, many, context)

    def print(self, top: int = 12) -> None:
        if self.spent:
            print("    wall s  backend CPU s  statement")
        for key, (seconds, cpu_spent) in sorted(self.spent.items(), key=lambda item: -item[1][1])[:top]:
            print(f"    {seconds:6.2f}  {cpu_spent:13.2f}  {key}")

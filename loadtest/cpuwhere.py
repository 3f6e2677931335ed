"""Where a process's CPU went, from `perf record -g` samples: its own code
by program or library, and the kernel by the call that entered it (the
libc function that made the system call), page faults apart.

Used by `bench_edge.py --where`. In the kernel is most of what a request
costs nginx on loopback: a response's writev also delivers it to the
client's socket and wakes the client, and that work grows when the client
waits more between responses: nginx's own work a little slower costs
about half as much again in the kernel (docs/benchmarks.md).
"""

import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

KERNEL = "[kernel.kallsyms]"
PAGE_FAULTS = "kernel: page faults"
KERNEL_OTHER = "kernel: interrupts, other"
LUAJIT = "LuaJIT: its VM and traces"
# One frame of `perf script -F ip,sym,dso`: "<address> <symbol> (<dso>)".
_FRAME = re.compile(r"^\s*[0-9a-f]+ (.*) \((.*)\)$")
_LIBRARIES = {"nginx": "nginx", "ngx_http_lua_module.so": "ngx_lua", "libc.so.6": "libc"}


def _call(symbol: str) -> str:
    """The system call a libc function makes: __GI___writev is writev."""
    return re.sub(r"^(__GI_)?(__libc_)?_*", "", symbol)


def part(frames: list[tuple[str, str]]) -> str:
    """Where one sample was, from its frames (symbol, dso), innermost first."""
    dso = frames[0][1]
    if dso == KERNEL:
        if any(name in ("asm_exc_page_fault", "exc_page_fault") for name, _ in frames):
            return PAGE_FAULTS
        caller = next((name for name, where in frames if where != KERNEL), None)
        if caller is None or caller == "[unknown]":
            return KERNEL_OTHER
        return f"kernel: {_call(caller)}"
    name = Path(dso).name
    if "luajit" in name or name == "[unknown]" or name.startswith("perf-"):
        # Code in no file is LuaJIT's machine code: nothing else in nginx makes any.
        return LUAJIT
    return _LIBRARIES.get(name, "other libraries")


def shares(script: str) -> dict[str, float]:
    """The share of the samples in each part, from `perf script -F ip,sym,dso` of a -g recording."""
    counts: Counter[str] = Counter()
    for sample in script.split("\n\n"):
        frames = [match.groups() for match in map(_FRAME.match, sample.splitlines()) if match]
        if frames:
            counts[part(frames)] += 1
    total = sum(counts.values())
    return {name: count / total for name, count in counts.items()} if total else {}


def perf_on(pids: list[int], *args: str) -> subprocess.Popen:
    """perf with `args` (`stat ...`, `record ...`) attached to the processes
    `pids`, and attached by the time it returns, until perf_off."""
    process = subprocess.Popen(
        ["perf", *args, "-p", ",".join(map(str, pids))], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(0.2)
    return process


def perf_off(process: subprocess.Popen) -> None:
    """Stops perf_on's perf, which writes its file and exits."""
    process.send_signal(signal.SIGINT)
    process.wait(timeout=30)


class Recorder:
    """`perf record` of some processes' CPU (cpu-clock, with call stacks) until stopped."""

    def __init__(self, path: Path, pids: list[int]) -> None:
        self.path = path
        self.process = perf_on(pids, "record", "-q", "-e", "cpu-clock", "-F", "1999", "-g", "-o", str(path))

    def stop(self) -> dict[str, float]:
        """Stops recording; the shares of what was recorded (empty if perf could not record)."""
        perf_off(self.process)
        if not self.path.exists():
            return {}
        script = subprocess.run(
            ["perf", "script", "-i", str(self.path), "-F", "ip,sym,dso"],
            capture_output=True,
            text=True,
        ).stdout
        self.path.unlink()
        return shares(script)

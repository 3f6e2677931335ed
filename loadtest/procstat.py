"""CPU time of processes and threads, from /proc (Linux), for the
benchmarks' per-process accounting."""

import os
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(path: Path) -> list[str] | None:
    """The fields of a /proc stat file after the command name, or None if it is gone."""
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU seconds of these processes (all their threads)."""
    total = 0
    for pid in pids:
        fields = _stat(Path(f"/proc/{pid}/stat"))
        if fields:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`. /proc is listed rather than
    globbed: pathlib's glob asks each entry whether it exists, and one whose
    process ended in between raises ProcessLookupError there."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(Path("/proc", name, "stat"))
            if fields and int(fields[1]) == pid:
                found.append(int(name))
    return found

"""Process groups: children that die with their parent, a subreaper that
adopts orphaned descendants, and a group stopped in order."""

import contextlib
import ctypes
import os
import signal
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def die_with_parent(sig: int):
    """A preexec_fn: the child gets `sig` when the process that started it
    dies, so it is never left behind. Python runs preexec_fn after any
    user change (Popen's user=), which would otherwise clear the setting.
    Start such children from the main thread: the kernel sends the signal
    when the thread that forked them ends."""
    parent = os.getpid()

    def preexec() -> None:
        _prctl(PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # the parent died before prctl ran
            os.kill(os.getpid(), sig)

    return preexec


def become_subreaper() -> None:
    """Orphaned descendants (workers whose master died) become this
    process's children, so it can reap them."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def _stats():
    """(pid, [state, ppid, pgrp, ...]) of every process, from /proc/PID/stat."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
        yield int(entry.name), stat[stat.rindex(")") + 2 :].split()


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group `pgid`, from /proc."""
    return [pid for pid, fields in _stats() if fields[0] != "Z" and int(fields[2]) == pgid]


def children_of(parent: int) -> list[int]:
    """The child processes of `parent` (zombies too), from /proc."""
    return [pid for pid, fields in _stats() if int(fields[1]) == parent]


def reap_children() -> None:
    """Collects exited children without waiting (a subreaper inherits them)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def finish_group(pgid: int, sig: int, *, timeout: float, log) -> bool:
    """Sends `sig` to what is left of process group `pgid` and waits until it
    has emptied; SIGKILL after `timeout` seconds. Returns False if it had to
    kill. `log` takes one line of text."""
    members = group_members(pgid)
    if not members:
        return True
    log(
        f"{len(members)} process(es) of group {pgid} still running ({', '.join(map(str, members))}): "
        f"sending {signal.Signals(sig).name} and waiting for them to finish"
    )
    started = time.monotonic()
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return True
    while group_members(pgid):
        reap_children()
        if time.monotonic() - started > timeout:
            log(f"group {pgid} still running after {timeout:.0f}s: killing it (SIGKILL)")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            return False
        time.sleep(0.02)
    reap_children()
    log(f"group {pgid} finished in {time.monotonic() - started:.2f}s")
    return True

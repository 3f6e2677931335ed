"""supervisord for `make run` (devstack/stack.py prepares what it runs):
started in a session of its own, watched until every program runs and the
dashboard answers, asked to stop in order on Ctrl-C, SIGTERM or SIGHUP, and
replaced by the runner in stopping the programs should supervisord itself
die."""

import configparser
import http.client
import os
import select
import signal
import subprocess
import sys
import time
import xmlrpc.client
from contextlib import contextmanager, suppress
from pathlib import Path

import devstack
from devstack.net import wait_for_answer
from devstack.processes import become_subreaper, children_of, die_with_parent, group_members, reap_children

CONF = Path(__file__).resolve().with_name("supervisord.conf")
PYTHON = sys.executable
SUPERVISORD = "devstack.supervisord"  # the module the runner starts supervisord as
READY_TIMEOUT = 180.0


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM, SIGHUP) before supervisord was started."""


def say(text: str) -> None:
    print(f"devstack: {text}", flush=True)


def supervisor_rpc(env: dict[str, str]):
    from supervisor.xmlrpc import SupervisorTransport

    transport = SupervisorTransport(
        env["SUPERVISOR_USERNAME"], env["SUPERVISOR_PASSWORD"], f"unix://{env['SLINGSHOT_RUN_DIR']}/supervisor.sock"
    )
    return xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport)


def all_running(env: dict[str, str]) -> bool:
    """Whether supervisord says every program is RUNNING (False while it cannot say)."""
    try:
        states = [info["statename"] for info in supervisor_rpc(env).supervisor.getAllProcessInfo()]
    except (OSError, xmlrpc.client.Error, http.client.HTTPException):
        return False
    return bool(states) and all(state == "RUNNING" for state in states)


def dashboard_answers(env: dict[str, str]) -> bool:
    """Whether the dashboard answers its health check through its front
    (DASHBOARD_PORT) with 200: the front runs, a gunicorn worker has loaded
    the application and takes requests, PostgreSQL and Redis answer.

    supervisord's RUNNING says only that a program has not exited within
    its startsecs, and a worker still loading leaves a first request
    waiting: on a first start, while every program loads at once, for
    longer than a person or a test waits."""
    try:
        return wait_for_answer(int(env["DASHBOARD_PORT"]), timeout=2) == 200
    except TimeoutError:
        return False


def supervise(run: Path, env: dict[str, str], stop: "StopSignals", *, banner: str) -> int:
    """Runs supervisord until it exits; prints `banner` once every program
    runs and the dashboard answers. Returns the runner's exit status."""
    # Should supervisord die, its programs become the runner's children, to be stopped in order.
    become_subreaper()
    say("starting supervisord")
    supervisord = subprocess.Popen(
        [PYTHON, "-m", SUPERVISORD, "-c", str(CONF)],
        env=env,
        cwd=devstack.REPO,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=die_with_parent(signal.SIGTERM),
    )
    stop.forward_to(supervisord)
    terminal = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
    started = time.monotonic()
    announced = stopping_said = False
    pids: dict[str, int] = {}
    asked_at = 0.0
    while True:
        try:
            code = supervisord.wait(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            pass
        reap_adopted(supervisord.pid)
        if terminal is not None and not stop.requested and hung_up(terminal):
            os.kill(os.getpid(), signal.SIGHUP)  # what a terminal that closes says: stop
        if stop.requested and not stopping_said:
            say(
                "stopping: the edge first (its workers write their clicks to Redis), then the pushed clicks, the "
                "dashboard's front, the webhooks, the links' checker, the screening lists, the imports, the "
                "dashboard, the publisher and the importer, then PostgreSQL, and Redis last"
            )
            stopping_said = True
        elif not stop.requested and time.monotonic() - asked_at >= 1.0:
            asked_at = time.monotonic()
            pids = program_pids(env) or pids
            if not announced and pids and all_running(env) and dashboard_answers(env):
                print(banner, flush=True)
                announced = True
            elif not announced and time.monotonic() - started > READY_TIMEOUT:
                say(
                    f"!!! not every program is RUNNING, or the dashboard does not answer "
                    f"http://127.0.0.1:{env['DASHBOARD_PORT']}/healthz, after {READY_TIMEOUT:.0f}s: "
                    "see `make status` and `make logs`"
                )
                announced = True
    if stop.requested and code == 0:
        say("the stack has stopped")
        return 0
    say(
        f"!!! supervisord exited unexpectedly (status {code}; see {run / 'logs' / 'supervisord.log'}): "
        "stopping the programs it left, in its order"
    )
    stop_in_order(left_programs(pids))
    say("stopped; `make run` starts the stack again")
    return 1


def hung_up(fd: int) -> bool:
    """Whether the terminal on `fd` has gone (its window closed, its SSH
    session dropped). The runner, in a process group of its own, is sent no
    SIGHUP then: the kernel's goes to make, the session's leader, which
    stays until its child exits."""
    poller = select.poll()
    poller.register(fd, 0)  # a hang-up, an error or a closed descriptor is reported whatever the mask
    return bool(poller.poll(0))


def program_pids(env: dict[str, str]) -> dict[str, int]:
    """Each running program's pid, as supervisord last said ({} while it cannot say)."""
    try:
        return {info["name"]: info["pid"] for info in supervisor_rpc(env).supervisor.getAllProcessInfo() if info["pid"]}
    except (OSError, xmlrpc.client.Error, http.client.HTTPException):
        return {}


def reap_adopted(supervisord: int) -> None:
    """Collects the exited processes the runner adopted as a subreaper (a
    master whose keep_group died, say), leaving supervisord to Popen: the
    kernel names an exited child without collecting it (WNOWAIT), so that
    the runner does not read every process's /proc entry four times a
    second to find its own."""
    while True:
        try:
            exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if exited is None or exited.si_pid == supervisord:
            return
        with suppress(ChildProcessError):
            os.waitpid(exited.si_pid, 0)


def left_programs(said: dict[str, int]) -> dict[str, int]:
    """supervisord's programs, once it died: the runner's children, each
    named by the SUPERVISOR_PROCESS_NAME supervisord put in its
    environment, so that one started again since supervisord's last answer
    (`said`) is found too. A program that wrote its title over its
    environment (redis-server) is taken from `said` while its pid is still
    a child of the runner's."""
    _let_forks_start()
    children, programs = children_of(os.getpid()), {}
    for pid in children:
        try:
            # A program leads its own process group (supervisord's setpgrp); a
            # worker its master left behind has the same environment, not that.
            if os.getpgid(pid) != pid:
                continue
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for variable in environ:
            if variable.startswith(b"SUPERVISOR_PROCESS_NAME="):
                programs[variable.partition(b"=")[2].decode()] = pid
    claimed = set(programs.values())
    for name, pid in said.items():
        if name not in programs and pid in children and pid not in claimed:
            programs[name] = pid
    return programs


def _let_forks_start(timeout: float = 5.0) -> None:
    """Waits while a child of the runner still runs supervisord's code: a
    program supervisord forked just before it died, not yet started (its
    environment, which names it, comes with its exec)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_runs_supervisord(pid) for pid in children_of(os.getpid())):
        time.sleep(0.05)


def _runs_supervisord(pid: int) -> bool:
    with suppress(OSError):
        return SUPERVISORD.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


def stop_in_order(pids: dict[str, int]) -> None:
    """What supervisord does on SIGTERM, for programs it left behind: each
    gets its stopsignal, highest priority first, and is waited for up to its
    stopwaitsecs (devstack/supervisord.conf), then killed."""
    conf = configparser.RawConfigParser()
    conf.read(CONF)
    programs = []
    for section in conf.sections():
        kind, _, name = section.partition(":")
        if kind in ("program", "eventlistener") and name in pids:
            options = conf[section]
            programs.append(
                (
                    int(options.get("priority", "999")),
                    name,
                    options.get("stopsignal", "TERM"),
                    float(options.get("stopwaitsecs", "10")),
                )
            )
    for _, name, signame, wait in sorted(programs, reverse=True):
        pid = pids[name]
        try:
            os.kill(pid, signal.Signals[f"SIG{signame}"])
        except ProcessLookupError:
            # One whose output went to supervisord may have ended on its first
            # write since (a broken pipe): a program just started, say.
            say(f"{name} (pid {pid}) had exited already")
            continue
        deadline = time.monotonic() + wait
        while group_members(pid) and time.monotonic() < deadline:
            reap_children()
            time.sleep(0.05)
        if group_members(pid):
            os.killpg(pid, signal.SIGKILL)
            say(f"{name} (pid {pid}) killed after {wait:.0f}s")
        else:
            say(f"stopped {name} (pid {pid})")
        reap_children()


class StopSignals:
    """Ctrl-C, SIGTERM and SIGHUP: before supervisord runs they interrupt the
    preparation; afterwards they ask supervisord, once, to stop in order."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.requested = False
        self.supervisord: subprocess.Popen | None = None
        for sig in self.SIGNALS:
            signal.signal(sig, self._handle)

    def forward_to(self, supervisord: subprocess.Popen) -> None:
        self.supervisord = supervisord
        if self.requested:
            supervisord.terminate()

    def _handle(self, signum, frame) -> None:
        first = not self.requested
        self.requested = True
        if self.supervisord is None:
            raise Interrupted()
        if first and self.supervisord.poll() is None:
            self.supervisord.terminate()  # SIGTERM: supervisord's ordered shutdown
        elif not first:
            say("still stopping, one program at a time (each has its stopwaitsecs in devstack/supervisord.conf)")


@contextmanager
def foreground_terminal():
    """On a terminal, the runner becomes the terminal's foreground process
    group until it exits: Ctrl-C then reaches it alone (supervisord and its
    programs run in sessions of their own), and make sees a clean exit."""
    fd = sys.stdin.fileno() if sys.stdin is not None else -1
    previous = None
    if fd >= 0 and os.isatty(fd):
        ignored = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            previous = os.tcgetpgrp(fd)
            if os.getpid() != os.getsid(0):  # a session leader leads its group already
                os.setpgid(0, 0)
            os.tcsetpgrp(fd, os.getpgrp())
        except OSError:
            previous = None
        finally:
            signal.signal(signal.SIGTTOU, ignored)
    try:
        yield
    finally:
        if previous is not None and previous != os.getpgrp():
            ignored = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            try:
                os.tcsetpgrp(fd, previous)
            except OSError:
                pass  # that group has gone
            finally:
                signal.signal(signal.SIGTTOU, ignored)

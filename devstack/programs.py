"""The programs supervisord runs for `make run` (devstack/supervisord.conf),
each as `python -m devstack PROGRAM`.

Each one reads the run directory and the ports from the environment that
devstack/stack.py gave supervisord, and then becomes the server itself
(exec), so that supervisord's signals and a `kill` reach the server, except
for the three whose master process has workers: the edge (nginx), the
dashboard (gunicorn) and its front (nginx). A worker outlives its master
when the master is killed (the edge's keep serving through reuseport, and
hold clicks not yet written to Redis), so those three run under
`keep_group`, which stays the master's parent and makes such orphans finish
before it exits and supervisord starts a new master.
"""

import os
import pwd
import signal
import subprocess
import sys
from pathlib import Path

import devstack
from devstack.dashboard import gunicorn_command, render_front_conf
from devstack.edge import edge_command, render_edge_conf
from devstack.nginx import nginx_command
from devstack.postgres import postgres_command
from devstack.processes import become_subreaper, die_with_parent, finish_group
from devstack.redis import redis_command

PORT_DEFAULTS = {
    "DASHBOARD_PORT": 8000,  # the dashboard's front (nginx)
    "EDGE_PORT": 8080,
    "EDGE_TLS_PORT": 8443,
    "POSTGRES_PORT": 15432,
    "REDIS_PORT": 16379,
    "GUNICORN_PORT": 18000,  # gunicorn, for the front and the edge's calls only
    "LIVE_PORT": 18010,  # serve_live, the dashboard's pushed clicks, for the front only
}
MANAGE = [sys.executable, str(devstack.REPO / "dashboard" / "manage.py")]


def run_dir() -> Path:
    return Path(os.environ.get("SLINGSHOT_RUN_DIR") or devstack.REPO / ".run").absolute()


def port(name: str) -> int:
    return int(os.environ.get(name) or PORT_DEFAULTS[name])


def log(line: str) -> None:
    """A line in the program's own log (supervisord captures stdout)."""
    print(f"devstack: {line}", flush=True)


def describe_exit(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"


def keep_group(
    command: list[str],
    *,
    what: str,
    stop_signal: int,
    leftover_signal: int,
    drain_timeout: float,
    leader_file: Path,
    **popen,
) -> int:
    """Runs `command` as the leader of a process group of its own and waits
    for it. supervisord's stop signal (any of TERM, INT, QUIT, HUP) is passed
    on as `stop_signal`; if this process dies, the kernel sends the leader
    `stop_signal` (die_with_parent). When the leader has exited, whatever
    is left of its group (orphaned workers) gets `leftover_signal` and is
    waited for, up to `drain_timeout` seconds. A group left behind by an
    earlier keeper that was killed (its leader's pid is in `leader_file`) is
    finished the same way before a new leader starts.

    Returns 0 after a requested stop, 1 when the leader ended on its own,
    so that supervisord counts it as a crash and starts this again."""
    become_subreaper()
    previous = leader_file.read_text().strip() if leader_file.exists() else ""
    if previous.isdigit():
        finish_group(int(previous), leftover_signal, timeout=drain_timeout, log=log)
    stopping = False
    leader = None

    def stop(signum, frame):
        nonlocal stopping
        stopping = True
        if leader is not None and leader.poll() is None:
            leader.send_signal(stop_signal)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(sig, stop)
    leader = subprocess.Popen(command, process_group=0, preexec_fn=die_with_parent(stop_signal), **popen)
    leader_file.write_text(f"{leader.pid}\n")
    if stopping:  # a stop signal came while it was starting
        leader.send_signal(stop_signal)
    code = leader.wait()
    if not stopping:
        log(
            f"{what} (pid {leader.pid}) {describe_exit(code)}; finishing its process group, then exiting "
            "so that supervisord starts it again"
        )
    finished = finish_group(leader.pid, leftover_signal, timeout=drain_timeout, log=log)
    leader_file.unlink(missing_ok=True)
    if not finished:
        log(f"!!! {what}'s leftover processes had to be killed: what they held in memory is lost")
    return 0 if stopping and code == 0 and finished else 1


def _become_db_owner() -> None:
    """PostgreSQL refuses to run as root: as root, become `postgres` first."""
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.setgroups([])
        os.setgid(owner.pw_gid)
        os.setuid(owner.pw_uid)
        os.environ.update(HOME=owner.pw_dir, USER="postgres", LOGNAME="postgres")


def postgres() -> None:
    command = postgres_command(run_dir() / "pg", port("POSTGRES_PORT"))
    os.chdir("/")
    _become_db_owner()
    os.execv(command[0], command)


def redis() -> None:
    # Every acknowledged write is on disk (appendfsync always): the clicks
    # the edge has written here are its only copy until the importer has
    # stored them.
    command = redis_command(
        run_dir() / "redis", port("REDIS_PORT"), password=os.environ.get("REDIS_PASSWORD"), appendfsync="always"
    )
    os.execv(command[0], command)


def edge() -> None:
    prefix = run_dir() / "nginx"
    render_edge_conf(prefix, port("EDGE_PORT"), tls_port=port("EDGE_TLS_PORT"))
    # Where the HTTP -> HTTPS redirect of a domain sends visitors.
    os.environ.setdefault("EDGE_HTTPS_PORT", str(port("EDGE_TLS_PORT")))
    # SIGQUIT is nginx's graceful stop: each worker finishes its requests and
    # sends its clicks to Redis before it exits (what it cannot send stays
    # in the click spool, for the next workers).
    sys.exit(
        keep_group(
            edge_command(prefix, workers=os.environ.get("EDGE_WORKERS", "auto")),
            what="nginx master",
            stop_signal=signal.SIGQUIT,
            leftover_signal=signal.SIGQUIT,
            drain_timeout=float(os.environ.get("EDGE_DRAIN_TIMEOUT", "30")),
            leader_file=run_dir() / "edge-master.pid",
        )
    )


def dashboard() -> None:
    run = run_dir()
    command = gunicorn_command(
        port("GUNICORN_PORT"), workers=os.environ.get("DASHBOARD_WORKERS", "2"), control_socket=run / "gunicorn.ctl"
    )
    # SIGTERM is gunicorn's graceful stop, for its master and its workers alike.
    sys.exit(
        keep_group(
            [*command, "--access-logfile", "-"],
            what="gunicorn master",
            stop_signal=signal.SIGTERM,
            leftover_signal=signal.SIGTERM,
            drain_timeout=35.0,
            leader_file=run / "dashboard-master.pid",
        )
    )


def front() -> None:
    """nginx on DASHBOARD_PORT in front of gunicorn (dashboard/nginx.conf)."""
    prefix = run_dir() / "front"
    render_front_conf(prefix, port("DASHBOARD_PORT"), gunicorn_port=port("GUNICORN_PORT"), live_port=port("LIVE_PORT"))
    # SIGQUIT: nginx's graceful stop, in which each worker finishes the
    # requests it has begun, for up to its worker_shutdown_timeout.
    sys.exit(
        keep_group(
            nginx_command(prefix),
            what="front nginx master",
            stop_signal=signal.SIGQUIT,
            leftover_signal=signal.SIGQUIT,
            drain_timeout=30.0,
            leader_file=run_dir() / "front-master.pid",
        )
    )


def importer() -> None:
    os.execv(MANAGE[0], [*MANAGE, "import_clicks"])


def publisher() -> None:
    os.execv(MANAGE[0], [*MANAGE, "run_publisher"])


def imports() -> None:
    os.execv(MANAGE[0], [*MANAGE, "run_imports"])


def webhooks() -> None:
    os.execv(MANAGE[0], [*MANAGE, "deliver_webhooks"])


def _wait_for_stop() -> None:
    """What a program with nothing to do runs: a process that only waits
    for its stop, so that supervisord sees it RUNNING without loading Django."""
    stops = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    signal.sigwait(stops)


def screen() -> None:
    """The screening lists read now and every SCREEN_REFRESH_MINUTES, and
    the lookups asked again every SCREEN_RELOOKUP_HOURS; with neither a list
    nor a lookup configured, a process that only waits for its stop."""
    names = ("SCREEN_LISTS", "SCREEN_ALLOWLIST", "SAFE_BROWSING_API_KEY", "SCREEN_DNSBL_ZONES")
    if any(os.environ.get(name, "").strip(", ") for name in names):
        os.execv(MANAGE[0], [*MANAGE, "screen_lists"])
    _wait_for_stop()


def linkhealth() -> None:
    """The links' destinations checked every LINK_HEALTH_HOURS (manage.py
    check_links, which sends requests to them); unless that is set in the
    environment to some hours, a process that only waits for its stop."""
    try:
        hours = float(os.environ.get("LINK_HEALTH_HOURS", "") or 0)
    except ValueError:
        hours = 1.0  # check_links says what is wrong with it
    if hours > 0:
        os.execv(MANAGE[0], [*MANAGE, "check_links"])
    _wait_for_stop()


def live() -> None:
    os.execv(MANAGE[0], [*MANAGE, "serve_live", "--port", str(port("LIVE_PORT"))])


PROGRAMS = {
    "postgres": postgres,
    "redis": redis,
    "edge": edge,
    "dashboard": dashboard,
    "front": front,
    "importer": importer,
    "publisher": publisher,
    "imports": imports,
    "webhooks": webhooks,
    "screen": screen,
    "linkhealth": linkhealth,
    "live": live,
}

"""`make run`: the whole local stack in one foreground command.

`python -m devstack run` first does the one-time work (`prepare`: the run
directory and its secrets, initdb, the database's role, database and hll
extension, migrations, static files, the first admin user) with a
PostgreSQL of its own that it stops again, and then runs supervisord
(devstack/supervisord.conf) until Ctrl-C, SIGTERM or SIGHUP: supervisord
restarts any program that dies and stops them all in order.

The run directory is SLINGSHOT_RUN_DIR (default .run/ in the repository);
the ports are DASHBOARD_PORT, EDGE_PORT, POSTGRES_PORT and REDIS_PORT
(defaults in devstack/programs.py). Secrets are generated once into the run
directory's env file (mode 0600), which the programs get as their
environment and `manage.py` reads by itself (SLINGSHOT_ENV_FILE).

On a terminal the runner makes itself the terminal's foreground process
group while it runs, so that Ctrl-C reaches it alone, not make nor make's
shell: the stack then stops in order, and `make run` ends with status 0.
"""

import configparser
import http.client
import os
import pwd
import secrets
import signal
import socket
import subprocess
import sys
import time
import xmlrpc.client
from contextlib import contextmanager, suppress
from pathlib import Path

import devstack
from devstack.programs import MANAGE, PORT_DEFAULTS, port, run_dir

CONF = Path(__file__).resolve().with_name("supervisord.conf")
PYTHON = sys.executable
SECRETS = ("SECRET_KEY", "POSTGRES_PASSWORD", "REDIS_PASSWORD", "SUPERVISOR_PASSWORD", "EDGE_DASHBOARD_SECRET")
READY_TIMEOUT = 180.0


class StackError(Exception):
    """A failure the runner explains in one message, without a traceback."""


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM, SIGHUP) before supervisord was started."""


# --- the run directory -----------------------------------------------------------


def env_file(run: Path) -> Path:
    return run / "env"


def read_env_file(run: Path | None = None) -> dict[str, str]:
    path = env_file(run or run_dir())
    if not path.exists():
        return {}
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def write_env_file(run: Path, values: dict[str, str]) -> None:
    """Written as 0600 from its first byte: it holds the secrets; and under
    another name first, so that a reader never finds it half written."""
    path = env_file(run)
    making = path.with_name(path.name + ".new")
    fd = os.open(making, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("".join(f"{key}={value}\n" for key, value in values.items()))
    os.replace(making, path)


def stack_environment(run: Path) -> dict[str, str]:
    """The environment of everything the stack runs: ours, then the env
    file's values, then where things are."""
    return {
        **os.environ,
        **read_env_file(run),
        "SLINGSHOT_RUN_DIR": str(run),
        "SLINGSHOT_ENV_FILE": str(env_file(run)),
        "SLINGSHOT_REPO": str(devstack.REPO),
        "SLINGSHOT_PYTHON": PYTHON,
        "SLINGSHOT_USER": pwd.getpwuid(os.getuid()).pw_name,
        "DJANGO_SETTINGS_MODULE": "slingshot.settings",
        # Program output reaches the log files and the console line by line.
        "PYTHONUNBUFFERED": "1",
    }


def supervisord_pid(run: Path) -> int | None:
    """The pid of a supervisord still running from this run directory."""
    try:
        pid = int((run / "supervisord.pid").read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    ours = f"SLINGSHOT_RUN_DIR={run}".encode() in environ
    return pid if b"supervisord" in cmdline and ours else None


def ports_in_use(ports: dict[str, int]) -> list[str]:
    busy = []
    for name, number in ports.items():
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", number))
            except OSError:
                busy.append(f"{name}={number}")
    return busy


# --- prepare: the one-time work -----------------------------------------------------


def say(text: str) -> None:
    print(f"devstack: {text}", flush=True)


def step(command: list[str], *, env: dict[str, str], what: str, capture: bool = False) -> str:
    """Runs one preparation command in a session of its own (Ctrl-C reaches
    the runner, which stops it with SIGTERM); raises StackError if it fails."""
    child = subprocess.Popen(
        command,
        env=env,
        cwd=devstack.REPO,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else None,
        text=True,
    )
    try:
        output, _ = child.communicate()
    except BaseException:
        child.terminate()
        child.wait()
        raise
    if capture and child.returncode == 2:
        return output
    if child.returncode != 0:
        raise StackError(f"{what} failed (exit status {child.returncode}); its output is above")
    return output or ""


@contextmanager
def temporary_postgres(run: Path, env: dict[str, str]):
    """PostgreSQL for the one-time work, stopped (fast shutdown) afterwards."""
    datadir, pg_port = run / "pg", port("POSTGRES_PORT")
    log_path = run / "logs" / "postgres.log"
    with open(log_path, "ab") as log:
        server = subprocess.Popen(
            devstack.postgres_command(datadir, pg_port),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd="/",
            start_new_session=True,
            preexec_fn=devstack.die_with_parent(signal.SIGINT),
            **devstack.db_owner(),
        )
    try:
        try:
            devstack.wait_for_postgres(datadir, pg_port, timeout=120, process=server)
        except (RuntimeError, TimeoutError) as exc:
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-15:])
            raise StackError(f"PostgreSQL did not start: {exc}. The end of {log_path}:\n{tail}") from None
        yield
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def prepare(run: Path) -> dict[str, str]:
    """Everything that runs once before supervision; returns the stack's environment."""
    running = supervisord_pid(run)
    if running:
        raise StackError(
            f"a stack already runs from {run} (supervisord pid {running}): see `make status`; "
            "stop it with Ctrl-C in its terminal or `make ctl ARGS=shutdown`"
        )
    ports = {name: port(name) for name in PORT_DEFAULTS}
    busy = ports_in_use(ports)
    if busy:
        raise StackError(
            f"in use by another program: {', '.join(busy)}. Stop that program or choose other "
            f"ports, e.g. `{busy[0].split('=')[0]}={ports[busy[0].split('=')[0]] + 1} make run`"
        )
    run.mkdir(parents=True, exist_ok=True)
    run.chmod(0o755)  # the postgres user must reach run/pg
    (run / "logs").mkdir(exist_ok=True)

    known = read_env_file(run)
    values = {name: known.get(name) or secrets.token_urlsafe(32) for name in SECRETS}
    values.update({name: str(number) for name, number in ports.items()})
    values.update(
        DATABASE_URL=f"postgres://slingshot:{values['POSTGRES_PASSWORD']}@127.0.0.1:{ports['POSTGRES_PORT']}/slingshot",
        REDIS_HOST="127.0.0.1",
        EDGE_BASE_URL=os.environ.get("EDGE_BASE_URL") or f"http://127.0.0.1:{ports['EDGE_PORT']}",
        # Where the edge has link passwords checked: the dashboard, directly.
        EDGE_DASHBOARD_URL=f"http://127.0.0.1:{ports['DASHBOARD_PORT']}",
        STATIC_ROOT=str(run / "static"),
        SUPERVISOR_USERNAME="slingshot",
        # Kept, so that the docs' commands can name the admin as `make run` made it.
        SLINGSHOT_ADMIN_USER=os.environ.get("SLINGSHOT_ADMIN_USER") or known.get("SLINGSHOT_ADMIN_USER") or "admin",
    )
    write_env_file(run, values)
    env = stack_environment(run)

    if devstack.init_postgres(run / "pg"):
        say(f"created a PostgreSQL cluster in {run / 'pg'}")
    with temporary_postgres(run, env):
        try:
            devstack.bootstrap_database(
                run / "pg",
                ports["POSTGRES_PORT"],
                role="slingshot",
                password=values["POSTGRES_PASSWORD"],
                database="slingshot",
            )
        except Exception as exc:  # psycopg's errors, told as they are
            hint = (
                " (the hll extension comes with Debian's postgresql-15-hll; bin/setup installs it)"
                if "hll" in str(exc)
                else ""
            )
            raise StackError(f"setting up the database failed: {str(exc).strip()}{hint}") from None
        foreign = step(
            [PYTHON, "-m", "devstack.migration_history"], env=env, capture=True, what="checking the migration history"
        ).splitlines()
        if foreign:
            raise StackError(
                f"the database in {run / 'pg'} was migrated by a newer version of Slingshot: it has migrations "
                f"this checkout does not know ({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}). "
                "Run that version (git checkout it, then `make run`), or restore the backup taken before its "
                "upgrade (docs/operations.md, 'Backing up and restoring')"
            )
        say("migrating the database")
        step([*MANAGE, "migrate", "--no-input", "-v", "1"], env=env, what="manage.py migrate")
        step([*MANAGE, "collectstatic", "--no-input", "-v", "0"], env=env, what="manage.py collectstatic")
        # Its name and password come from SLINGSHOT_ADMIN_USER and
        # SLINGSHOT_ADMIN_PASSWORD in the environment, never from arguments.
        step([*MANAGE, "ensure_admin"], env=env, what="manage.py ensure_admin")
    return env


# --- supervision ----------------------------------------------------------------------


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


def banner(run: Path, env: dict[str, str]) -> str:
    shown = os.path.relpath(run) if str(run).startswith(os.getcwd()) else str(run)
    # manage.py reads .run/env by itself; another run directory's env file must be named.
    manage = "" if run == devstack.REPO / ".run" else f"SLINGSHOT_ENV_FILE={shown}/env "
    return (
        "\n"
        f"  Slingshot is running (run directory {shown}):\n"
        f"    Dashboard:    http://127.0.0.1:{env['DASHBOARD_PORT']}/   (admin: /admin/, API: /api/v1/docs/)\n"
        f"    Short links:  http://127.0.0.1:{env['EDGE_PORT']}/<slug>"
        f" (HTTPS: https://127.0.0.1:{env['EDGE_TLS_PORT']}/<slug>)\n"
        f"    Logs:         {shown}/logs/<program>.log, or `make logs`; state: `make status`\n"
        f"    An API token: `{manage}.venv/bin/python dashboard/manage.py create_api_token "
        f"{env.get('SLINGSHOT_ADMIN_USER', 'admin')} --scope write`\n"
        f"    Lost the admin password? `{manage}.venv/bin/python dashboard/manage.py changepassword "
        f"{env.get('SLINGSHOT_ADMIN_USER', 'admin')}` while the stack runs.\n"
        "  Ctrl-C stops everything, the edge first so that its clicks reach Redis.\n"
    )


def supervise(run: Path, env: dict[str, str], stop: "StopSignals") -> int:
    # Should supervisord die, its programs become the runner's children, to be stopped in order.
    devstack.become_subreaper()
    say("starting supervisord")
    supervisord = subprocess.Popen(
        [PYTHON, "-m", "supervisor.supervisord", "-c", str(CONF)],
        env=env,
        cwd=devstack.REPO,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=devstack.die_with_parent(signal.SIGTERM),
    )
    stop.forward_to(supervisord)
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
        if stop.requested and not stopping_said:
            say(
                "stopping: the edge first (its workers write their clicks to Redis), then the imports, the dashboard, the "
                "publisher and the importer, then PostgreSQL, and Redis last"
            )
            stopping_said = True
        elif not stop.requested and time.monotonic() - asked_at >= 1.0:
            asked_at = time.monotonic()
            pids = program_pids(env) or pids
            if not announced and pids and all_running(env):
                print(banner(run, env), flush=True)
                announced = True
            elif not announced and time.monotonic() - started > READY_TIMEOUT:
                say(f"!!! not every program is RUNNING after {READY_TIMEOUT:.0f}s: see `make status`")
                announced = True
    if stop.requested and code == 0:
        say("the stack has stopped")
        return 0
    say(
        f"!!! supervisord exited unexpectedly (status {code}; see {run / 'logs' / 'supervisord.log'}): "
        "stopping the programs it left, in its order"
    )
    stop_in_order(pids)
    say("stopped; `make run` starts the stack again")
    return 1


def program_pids(env: dict[str, str]) -> dict[str, int]:
    """Each running program's pid, as supervisord last said ({} while it cannot say)."""
    try:
        return {info["name"]: info["pid"] for info in supervisor_rpc(env).supervisor.getAllProcessInfo() if info["pid"]}
    except (OSError, xmlrpc.client.Error, http.client.HTTPException):
        return {}


def reap_adopted(supervisord: int) -> None:
    """Collects the exited processes the runner adopted as a subreaper (a
    master whose keep_group died, say), leaving supervisord to Popen."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == supervisord:
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2 :].split()[1] == me:
            with suppress(ChildProcessError):
                os.waitpid(int(entry.name), os.WNOHANG)


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
            continue
        deadline = time.monotonic() + wait
        while devstack.group_members(pid) and time.monotonic() < deadline:
            devstack.reap_children()
            time.sleep(0.05)
        if devstack.group_members(pid):
            os.killpg(pid, signal.SIGKILL)
            say(f"{name} (pid {pid}) killed after {wait:.0f}s")
        else:
            say(f"stopped {name} (pid {pid})")
        devstack.reap_children()


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


def main_run() -> int:
    run = run_dir()
    signal.signal(signal.SIGTSTP, signal.SIG_IGN)  # Ctrl-Z would stop the runner alone, holding the terminal
    stop = StopSignals()
    with foreground_terminal():
        try:
            env = prepare(run)
        except StackError as exc:
            say(f"error: {exc}")
            return 1
        except Interrupted:
            say("interrupted before the stack started")
            return 130
        return supervise(run, env, stop)


def main_prepare() -> int:
    StopSignals()
    try:
        prepare(run_dir())
    except StackError as exc:
        say(f"error: {exc}")
        return 1
    except Interrupted:
        return 130
    return 0


def main_ctl(args: list[str]) -> int:
    """supervisorctl for the stack of this run directory: `make status`, `make ctl ARGS=...`."""
    run = run_dir()
    if not env_file(run).exists():
        say(f"no stack has been prepared in {run}: `make run` first")
        return 1
    return subprocess.call(
        [PYTHON, "-m", "supervisor.supervisorctl", "-c", str(CONF), *args], env=stack_environment(run)
    )

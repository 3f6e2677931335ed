"""`make run`: the whole local stack in one foreground command.

`python -m devstack run` first does the one-time work (`prepare`: the run
directory and its secrets, initdb, the database's role, database and hll
extension, migrations, static files, the first admin user) with a
PostgreSQL of its own that it stops again, and then runs supervisord
(devstack/supervisord.conf) until Ctrl-C, SIGTERM or SIGHUP: supervisord
restarts any program that dies and stops them all in order.

The run directory is SLINGSHOT_RUN_DIR (default .run/ in the repository);
the ports are DASHBOARD_PORT, EDGE_PORT, EDGE_TLS_PORT, POSTGRES_PORT,
REDIS_PORT and GUNICORN_PORT: those of the environment, else those the run
directory was made with, else the defaults (devstack/ports.py). Secrets are
generated once into the run directory's env file (mode 0600), which the
programs get as their environment and `manage.py` reads by itself
(SLINGSHOT_ENV_FILE).

On a terminal the runner makes itself the terminal's foreground process
group while it runs, so that Ctrl-C reaches it alone, not make nor make's
shell: the stack then stops in order, and `make run` ends with status 0.
"""

import os
import pwd
import re
import secrets
import signal
import subprocess
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import devstack
from devstack import ports as stack_ports
from devstack.envfile import env_file, read_env_file, write_env_file
from devstack.postgres import bootstrap_database, db_owner, init_postgres, postgres_command, wait_for_postgres
from devstack.processes import die_with_parent
from devstack.programs import run_dir
from devstack.supervision import (
    CONF,
    PYTHON,
    Interrupted,
    StopSignals,
    foreground_terminal,
    say,
    supervise,
)
from devstack.terminal import keep_writing

SECRETS = ("SECRET_KEY", "POSTGRES_PASSWORD", "REDIS_PASSWORD", "SUPERVISOR_PASSWORD", "EDGE_DASHBOARD_SECRET")
# The line of manage.py ensure_admin that shows a password it generated; the
# runner keeps it for its closing banner instead of printing it among the rest.
ONE_TIME_PASSWORD = re.compile(
    r"^created admin user '(?P<user>[^']+)' with one-time password: (?P<password>\S+)$", re.M
)


class StackError(Exception):
    """A failure the runner explains in one message, without a traceback."""


# --- the run directory -----------------------------------------------------------


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


# --- prepare: the one-time work -----------------------------------------------------


def step(command: list[str], *, env: dict[str, str], what: str, answer: bool = False) -> tuple[int, str]:
    """Runs one preparation command in a session of its own (Ctrl-C reaches
    the runner, which stops it with SIGTERM); raises StackError if it fails.
    Returns its exit status and, with `answer`, what it wrote to the pipe
    whose file descriptor it gets as its last argument; with `answer`, exit
    status 2 is an answer too (devstack/django_steps.py)."""
    read_end = write_end = None
    if answer:
        read_end, write_end = os.pipe()
        command = [*command, str(write_end)]
    try:
        child = subprocess.Popen(
            command,
            env=env,
            cwd=devstack.REPO,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            pass_fds=(write_end,) if answer else (),
        )
    finally:
        if write_end is not None:
            os.close(write_end)
    said = ""
    try:
        if read_end is not None:
            with os.fdopen(read_end, encoding="utf-8") as answered:
                said = answered.read()
        child.wait()
    except BaseException:
        child.terminate()
        child.wait()
        raise
    if child.returncode != 0 and not (answer and child.returncode == 2):
        raise StackError(f"{what} failed (exit status {child.returncode}); its output is above")
    return child.returncode, said


@contextmanager
def temporary_server(command: list[str], *, name: str, log_path: Path, ready, stop_signal: int, **popen):
    """A server of the stack's for one-time work, its output in `log_path`:
    started, waited for with `ready(process)`, and stopped with
    `stop_signal` afterwards (or when the runner dies)."""
    with open(log_path, "ab") as log:
        server = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd="/",
            start_new_session=True,
            preexec_fn=die_with_parent(stop_signal),
            **popen,
        )
    try:
        try:
            ready(server)
        except (RuntimeError, TimeoutError) as exc:
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-15:])
            raise StackError(f"{name} did not start: {exc}. The end of {log_path}:\n{tail}") from None
        yield
    finally:
        if server.poll() is None:
            server.send_signal(stop_signal)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@contextmanager
def temporary_postgres(run: Path, env: dict[str, str]):
    """PostgreSQL for the one-time work, stopped (fast shutdown) afterwards."""
    datadir, pg_port = run / "pg", int(env["POSTGRES_PORT"])
    with temporary_server(
        postgres_command(datadir, pg_port),
        name="PostgreSQL",
        log_path=run / "logs" / "postgres.log",
        ready=lambda server: wait_for_postgres(datadir, pg_port, timeout=120, process=server),
        stop_signal=signal.SIGINT,
        **db_owner(),
    ):
        yield


def refuse_if_running(run: Path) -> None:
    running = supervisord_pid(run)
    if running:
        raise StackError(
            f"a stack already runs from {run} (supervisord pid {running}): see `make status`; "
            "stop it with Ctrl-C in its terminal or `make ctl ARGS=shutdown`"
        )


def prepare(
    run: Path,
    *,
    fill_database: Callable[[dict[str, str]], None] | None = None,
    finish: Callable[[dict[str, str]], None] | None = None,
    command: str = "make run",
) -> tuple[dict[str, str], str | None]:
    """Everything that runs once before supervision; returns the stack's
    environment, and the admin's password when it was generated now.

    `make restore` (devstack/restore.py) fills a new database with
    `fill_database(env)` before it is migrated, and does the rest with
    `finish(env)` while PostgreSQL still runs; `command` is the one a port
    clash suggests running again."""
    refuse_if_running(run)
    known = read_env_file(run)
    ports, notes = stack_ports.chosen(os.environ, known)
    taken = stack_ports.busy(ports)
    if taken:
        raise StackError(stack_ports.clash_message(ports, taken, command=command))
    for note in notes:
        say(note)
    run.mkdir(parents=True, exist_ok=True)
    run.chmod(0o755)  # the postgres user must reach run/pg
    (run / "logs").mkdir(exist_ok=True)
    for protocol_log in (run / "logs").glob("console-stdout---*.log"):  # an older stack's, which `make logs` would show
        protocol_log.unlink()

    values = stack_values(run, known, ports)
    write_env_file(run, values)
    env = stack_environment(run)

    make_cluster(run)
    with temporary_postgres(run, env):
        told = set_up_database(run, env, values, fill_database=fill_database, finish=finish)
    generated = ONE_TIME_PASSWORD.search(told)
    if generated:
        say(f"created the admin user {generated['user']!r}: its password is in the banner once everything runs")
    else:
        print(told, end="", flush=True)
    return env, generated and generated["password"]


def stack_values(run: Path, known: dict[str, str], ports: dict[str, int]) -> dict[str, str]:
    """The run directory's env file: its secrets (kept, or made now), its
    ports, and the settings every program reads."""
    values = {name: known.get(name) or secrets.token_urlsafe(32) for name in SECRETS}
    values.update({name: str(number) for name, number in ports.items()})
    values.update(
        DATABASE_URL=f"postgres://slingshot:{values['POSTGRES_PASSWORD']}@127.0.0.1:{ports['POSTGRES_PORT']}/slingshot",
        REDIS_HOST="127.0.0.1",
        EDGE_BASE_URL=os.environ.get("EDGE_BASE_URL") or f"http://127.0.0.1:{ports['EDGE_PORT']}",
        # Where the edge has link passwords checked and passes the YOURLS
        # API: gunicorn itself. The edge is nginx, which sends a request
        # whole and takes the answer at once, as the front does; and the
        # front does not publish /internal/.
        EDGE_DASHBOARD_URL=f"http://127.0.0.1:{ports['GUNICORN_PORT']}",
        # People reach the dashboard through its front (dashboard/nginx.conf),
        # which appends their address to X-Forwarded-For: one proxy more than
        # TRUSTED_PROXY_COUNT, yours in front of it (docs/operations.md).
        DASHBOARD_FRONT="true",
        TRUSTED_PROXY_COUNT=os.environ.get("TRUSTED_PROXY_COUNT") or "0",
        STATIC_ROOT=str(run / "static"),
        SUPERVISOR_USERNAME="slingshot",
        # Kept, so that the docs' commands can name the admin as `make run` made it.
        SLINGSHOT_ADMIN_USER=os.environ.get("SLINGSHOT_ADMIN_USER") or known.get("SLINGSHOT_ADMIN_USER") or "admin",
    )
    return values


def make_cluster(run: Path) -> None:
    """initdb of run/pg, the first time."""
    try:
        if init_postgres(run / "pg"):
            say(f"created a PostgreSQL cluster in {run / 'pg'}")
    except subprocess.CalledProcessError:
        why = " (as root, PostgreSQL runs as `postgres`, which must be able to enter every folder above it)"
        raise StackError(
            f"initdb could not make a cluster in {run / 'pg'}{why if os.geteuid() == 0 else ''}; its message is above"
        ) from None


def set_up_database(run: Path, env: dict[str, str], values: dict[str, str], *, fill_database, finish) -> str:
    """The application's role and database, filled (a restore; prepare's
    hooks) and migrated, the static files and the admin, while the
    temporary PostgreSQL runs; returns what ensure_admin said."""
    try:
        bootstrap_database(
            run / "pg",
            int(values["POSTGRES_PORT"]),
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
    if fill_database:
        fill_database(env)
    say("migrating the database")
    status, told = step([PYTHON, "-m", "devstack.django_steps"], env=env, what="setting up the database", answer=True)
    if status == 2:
        foreign = told.splitlines()
        raise StackError(
            f"the database in {run / 'pg'} was migrated by a newer version of Slingshot: it has migrations "
            f"this checkout does not know ({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}). "
            "Run that version (git checkout it, then `make run`), or restore the backup taken before its "
            "upgrade (docs/operations.md, 'Backing up and restoring')"
        )
    if finish:
        finish(env)
    return told


def banner(run: Path, env: dict[str, str], admin_password: str | None = None) -> str:
    shown = os.path.relpath(run) if str(run).startswith(os.getcwd()) else str(run)
    # manage.py reads .run/env by itself; another run directory's env file must be named.
    manage = "" if run == devstack.REPO / ".run" else f"SLINGSHOT_ENV_FILE={shown}/env "
    admin = env.get("SLINGSHOT_ADMIN_USER", "admin")
    sign_in = (
        f"    Sign in as:   {admin}, password {admin_password}\n"
        "                  (shown only now; the first sign-in asks for a password of your own)\n"
        if admin_password
        else f"    Sign in as:   {admin}. Lost its password? `{manage}.venv/bin/python dashboard/manage.py "
        f"changepassword {admin}`\n"
    )
    return (
        "\n"
        f"  Slingshot is running (run directory {shown}):\n"
        f"    Dashboard:    http://127.0.0.1:{env['DASHBOARD_PORT']}/   (admin: /admin/, API: /api/v1/docs/)\n"
        f"{sign_in}"
        f"    Short links:  http://127.0.0.1:{env['EDGE_PORT']}/<slug>"
        f" (HTTPS: https://127.0.0.1:{env['EDGE_TLS_PORT']}/<slug>)\n"
        f"    Ports:        kept in {shown}/env for the next `make run`; to move one: `EDGE_PORT=9080 make run`\n"
        f"    Logs:         {shown}/logs/<program>.log, or `make logs`; state: `make status`\n"
        f"    An API token: `{manage}.venv/bin/python dashboard/manage.py create_api_token {admin} --scope write`\n"
        "  Ctrl-C stops everything, the edge first so that its clicks reach Redis.\n"
    )


def main_run() -> int:
    keep_writing()  # should the terminal go, the stack is still stopped in order
    run = run_dir()
    signal.signal(signal.SIGTSTP, signal.SIG_IGN)  # Ctrl-Z would stop the runner alone, holding the terminal
    stop = StopSignals()
    with foreground_terminal():
        try:
            env, admin_password = prepare(run)
        except StackError as exc:
            say(f"error: {exc}")
            return 1
        except Interrupted:
            say("interrupted before the stack started")
            return 130
        return supervise(run, env, stop, banner=banner(run, env, admin_password))


def main_prepare() -> int:
    StopSignals()
    try:
        env, admin_password = prepare(run_dir())
    except StackError as exc:
        say(f"error: {exc}")
        return 1
    except Interrupted:
        return 130
    if admin_password:
        say(f"sign in as {env['SLINGSHOT_ADMIN_USER']} with the password {admin_password} (shown only now)")
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

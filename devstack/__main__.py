"""`python -m devstack SERVICE`: the processes of the local stack (see Procfile).

`prepare` runs once before honcho starts the others: it creates `.run/`,
generates secrets on first run and writes `.run/env`, which honcho hands to
every process and Django reads as its defaults.
"""
import os
import secrets
import signal
import subprocess
import sys
import time

import devstack

RUN = devstack.REPO / ".run"
ENV_FILE = RUN / "env"
PYTHON = sys.executable
MANAGE = [PYTHON, str(devstack.REPO / "dashboard" / "manage.py")]

PORT_DEFAULTS = {"DASHBOARD_PORT": 8000, "EDGE_PORT": 8080, "POSTGRES_PORT": 15432, "REDIS_PORT": 16379}
SECRETS = ("SECRET_KEY", "POSTGRES_PASSWORD", "REDIS_PASSWORD")


def read_env_file() -> dict[str, str]:
    if not ENV_FILE.exists():
        return {}
    pairs = (line.split("=", 1) for line in ENV_FILE.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def port(name: str) -> int:
    return int(os.environ.get(name) or PORT_DEFAULTS[name])


def prepare() -> None:
    RUN.mkdir(exist_ok=True)
    RUN.chmod(0o755)  # the postgres user must reach .run/pg
    known = read_env_file()
    values = {name: known.get(name) or secrets.token_urlsafe(32) for name in SECRETS}
    ports = {name: port(name) for name in PORT_DEFAULTS}
    values.update({name: str(value) for name, value in ports.items()})
    values.update(
        DATABASE_URL=f"postgres://slingshot:{values['POSTGRES_PASSWORD']}@127.0.0.1:{ports['POSTGRES_PORT']}/slingshot",
        REDIS_HOST="127.0.0.1",
        EDGE_BASE_URL=os.environ.get("EDGE_BASE_URL") or f"http://127.0.0.1:{ports['EDGE_PORT']}",
    )
    ENV_FILE.write_text("".join(f"{key}={value}\n" for key, value in values.items()))
    ENV_FILE.chmod(0o600)
    if devstack.init_postgres(RUN / "pg"):
        print(f"created a PostgreSQL cluster in {RUN / 'pg'}")


def supervise(cmd: list[str], *, stop_signal: int, ready=None, **popen) -> None:
    """Runs cmd in its own session and turns Ctrl-C/SIGTERM into stop_signal,
    so each server shuts down its own clean way."""
    child = subprocess.Popen(cmd, start_new_session=True, **popen)

    def forward(signum, frame):
        if child.poll() is None:
            child.send_signal(stop_signal)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    if ready:
        ready()
    sys.exit(child.wait())


def run_postgres() -> None:
    datadir, pg_port = RUN / "pg", port("POSTGRES_PORT")

    def bootstrap():
        devstack.wait_for_postgres(datadir, pg_port)
        devstack.bootstrap_database(
            datadir, pg_port, role="slingshot", password=os.environ["POSTGRES_PASSWORD"], database="slingshot"
        )
        print("PostgreSQL is ready", flush=True)

    # SIGINT is PostgreSQL's fast shutdown: it does not wait for clients to leave.
    supervise(
        devstack.postgres_command(datadir, pg_port), stop_signal=signal.SIGINT, ready=bootstrap, cwd="/",
        **devstack.db_owner(),
    )


def run_redis() -> None:
    cmd = devstack.redis_command(RUN / "redis", port("REDIS_PORT"), password=os.environ.get("REDIS_PASSWORD"))
    supervise(cmd, stop_signal=signal.SIGTERM)


def run_edge() -> None:
    prefix = RUN / "nginx"
    devstack.render_edge_conf(prefix, port("EDGE_PORT"))
    # SIGQUIT is nginx's graceful stop: workers flush their buffered clicks.
    supervise(devstack.edge_command(prefix, workers=os.environ.get("EDGE_WORKERS", "auto")), stop_signal=signal.SIGQUIT)


def wait_until(check, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while subprocess.run(check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        if time.monotonic() > deadline:
            sys.exit(f"gave up waiting for {what}")
        time.sleep(0.5)


def run_dashboard() -> None:
    wait_until([*MANAGE, "check", "--database", "default"], "PostgreSQL")
    subprocess.run([*MANAGE, "migrate", "--no-input"], check=True)
    subprocess.run([*MANAGE, "collectstatic", "--no-input", "-v", "0"], check=True)
    subprocess.run(
        [*MANAGE, "ensure_admin", "--username", os.environ.get("SLINGSHOT_ADMIN_USER", ""),
         "--password", os.environ.get("SLINGSHOT_ADMIN_PASSWORD", "")],
        check=True,
    )
    dashboard_port = port("DASHBOARD_PORT")
    print(
        f"\n  Dashboard:                http://127.0.0.1:{dashboard_port}/  (Django admin: /admin/, API: /api/v1/docs/)\n"
        f"  Edge (short links):       http://127.0.0.1:{port('EDGE_PORT')}/<slug>\n"
        "  Sign in with the admin user above. Ctrl-C stops everything.\n",
        flush=True,
    )
    command = devstack.gunicorn_command(dashboard_port, workers=os.environ.get("DASHBOARD_WORKERS", "2"))
    os.execv(PYTHON, [*command, "--access-logfile", "-"])


def run_after_migrations(*command: str) -> None:
    wait_until([*MANAGE, "migrate", "--check"], "the database migrations")
    os.execv(PYTHON, [*MANAGE, *command])


def run_importer() -> None:
    run_after_migrations("import_clicks")


def run_publisher() -> None:
    run_after_migrations("run_publisher")


SERVICES = {
    "prepare": prepare,
    "postgres": run_postgres,
    "redis": run_redis,
    "edge": run_edge,
    "dashboard": run_dashboard,
    "importer": run_importer,
    "publisher": run_publisher,
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SERVICES:
        sys.exit(f"usage: python -m devstack {{{'|'.join(SERVICES)}}}")
    SERVICES[sys.argv[1]]()

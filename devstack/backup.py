"""`make backup` and `make restore`: a local stack's data, and what its
clients hold that depends on a secret, in one folder; and back into a run
directory of its own (docs/operations.md, "Backing up and restoring").

A backup is a folder (mode 0700) of:

    redis.rdb       Redis at one moment: a snapshot that Redis forks and
                    sends (`redis-cli --rdb`), never files copied while
                    Redis writes them. It holds what PostgreSQL does not:
                    the clicks not stored yet, the visit counts of limited
                    links, the counts the accounting compares.
    postgres.dump   PostgreSQL, one consistent snapshot (pg_dump, custom
                    format), taken *after* Redis's, so that every click is
                    in one or the other: a click the importer stores in
                    between is in both, and after a restore the importer
                    stores it once (by its id); the other order would lose
                    the clicks stored and acknowledged in between.
    secrets.env     SECRET_KEY (YOURLS signatures, sessions and the keys of
                    imports waiting are made from it: a new one would void
                    them) and the settings the run directory remembers (its
                    ports, which the short URLs name, and the admin's name).
                    Mode 0600: as sensitive as the run directory's env.
    certs/          the edge's certificates and their keys (mode 0600).
    manifest.json   what made the backup, when, and each file's size and
                    SHA-256, which a restore checks first.

The other secrets of the run directory (PostgreSQL's, Redis's, supervisord's
passwords, the edge's secret with the dashboard) belong to its servers, not
to any client: a restore makes new ones (devstack/restore.py). A backup is
written as `<name>.partial` and renamed when complete.
"""

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlsplit

import devstack
from devstack import stack
from devstack.envfile import read_env_file
from devstack.net import wait_for_port
from devstack.postgres import pg_bindir
from devstack.programs import run_dir
from devstack.redis import redis_command
from devstack.stack import StackError, say
from devstack.supervision import supervisor_rpc

FORMAT = 1
BACKUPS = devstack.REPO / "backups"
REDIS_FILE = "redis.rdb"
POSTGRES_FILE = "postgres.dump"
SECRETS_FILE = "secrets.env"
CERTS = "certs"
MANIFEST = "manifest.json"
# What a restore carries over from the backed-up run directory's env file.
CARRIED = (
    "SECRET_KEY",
    "SLINGSHOT_ADMIN_USER",
    "DASHBOARD_PORT",
    "EDGE_PORT",
    "EDGE_TLS_PORT",
    "POSTGRES_PORT",
    "REDIS_PORT",
)


def certs_dir(run: Path) -> Path:
    """Where the edge of `make run` reads its certificates (nginx's prefix's conf/certs)."""
    return run / "nginx" / "conf" / "certs"


def version() -> str:
    text = (devstack.REPO / "dashboard" / "slingshot" / "release.py").read_text()
    return re.search(r'^VERSION = "([^"]+)"', text, re.M).group(1)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def run_quietly(command: list[str], *, env: dict[str, str], what: str) -> str:
    """Runs a client program; its output when it succeeds, else StackError
    with what it said."""
    result = subprocess.run(command, env=env, cwd="/", capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        said = (result.stderr.strip() or result.stdout.strip() or "nothing").splitlines()
        raise StackError(f"{what} failed (exit status {result.returncode}): " + "\n  ".join(said[-15:]))
    return result.stdout


# --- credentials, never on a command line ------------------------------------------


@contextlib.contextmanager
def postgres_client(env: dict[str, str]):
    """The environment in which pg_dump and pg_restore connect as the
    stack's application role: its password in a password file (0600) that
    is removed afterwards."""
    url = urlsplit(env["DATABASE_URL"])
    fd, passfile = tempfile.mkstemp(prefix="slingshot-pgpass-")
    try:
        fields = [url.hostname, str(url.port or 5432), unquote(url.path.lstrip("/")), unquote(url.username)]
        fields.append(unquote(url.password or ""))
        with os.fdopen(fd, "w") as out:
            out.write(":".join(field.replace("\\", "\\\\").replace(":", "\\:") for field in fields) + "\n")
        yield {
            **os.environ,
            "PGHOST": url.hostname,
            "PGPORT": str(url.port or 5432),
            "PGUSER": unquote(url.username),
            "PGDATABASE": unquote(url.path.lstrip("/")),
            "PGPASSFILE": passfile,
            "PGCONNECT_TIMEOUT": "10",
        }
    finally:
        os.unlink(passfile)


def redis_client_env(env: dict[str, str]) -> dict[str, str]:
    """redis-cli reads the password from REDISCLI_AUTH."""
    return {**os.environ, "REDISCLI_AUTH": env["REDIS_PASSWORD"]}


def redis_connection(env: dict[str, str]):
    import redis

    return redis.Redis(host="127.0.0.1", port=int(env["REDIS_PORT"]), password=env["REDIS_PASSWORD"], socket_timeout=30)


# --- servers of a stopped stack -------------------------------------------------


@contextlib.contextmanager
def temporary_redis(run: Path, env: dict[str, str]):
    """The stack's Redis on its own data, as devstack/programs.py runs it,
    stopped (SIGTERM: it writes its append-only file to disk first)
    afterwards; a redis-py client of it once it has loaded its data."""
    port = int(env["REDIS_PORT"])
    with stack.temporary_server(
        redis_command(run / "redis", port, password=env["REDIS_PASSWORD"], appendfsync="always"),
        name="Redis",
        log_path=run / "logs" / "redis.log",
        ready=lambda server: wait_for_port(port, timeout=60, process=server),
        stop_signal=signal.SIGTERM,
    ):
        client = redis_connection(env)
        wait_loaded(client)
        yield client


def wait_loaded(client, *, timeout: float = 300.0) -> None:
    """Until Redis has read its data from disk (it answers LOADING meanwhile)."""
    import redis

    deadline = time.monotonic() + timeout
    while True:
        try:
            client.ping()
            return
        except redis.BusyLoadingError:
            if time.monotonic() > deadline:
                raise StackError(f"Redis was still loading its data after {timeout:.0f}s") from None
            time.sleep(0.1)


# --- backing up ----------------------------------------------------------------------


def backup(run: Path, target: Path, *, stop_edge: bool = False) -> dict:
    """Writes a backup of the stack of `run` into `target` (which must not
    exist); returns its manifest. A backup that fails leaves nothing."""
    env = read_env_file(run)
    if not env or not (run / "pg" / "PG_VERSION").exists():
        raise StackError(f"no stack has been prepared in {run}: nothing to back up (`make run` makes one)")
    if target.exists():
        raise StackError(f"{target} exists already: name a new folder (BACKUP_DIR=...)")
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)  # an earlier attempt's, which never became a backup
    target.parent.mkdir(parents=True, exist_ok=True)
    partial.mkdir(mode=0o700)
    partial.chmod(0o700)
    try:
        manifest = write_backup(run, {**env, "SLINGSHOT_RUN_DIR": str(run)}, partial, stop_edge=stop_edge)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    partial.rename(target)
    return manifest


def write_backup(run: Path, env: dict[str, str], folder: Path, *, stop_edge: bool) -> dict:
    running = stack.supervisord_pid(run) is not None
    with contextlib.ExitStack() as servers:
        if running:
            say(f"backing up the stack running from {run}")
            if stop_edge:
                servers.enter_context(edge_stopped(env))
        else:
            say(f"backing up the stopped stack of {run}: its PostgreSQL and Redis run for the time it takes")
            servers.enter_context(stack.temporary_postgres(run, env))
            servers.enter_context(temporary_redis(run, env))
        taken_at = datetime.now(UTC)
        say("Redis: a snapshot (redis-cli --rdb)")
        run_quietly(
            ["redis-cli", "-h", "127.0.0.1", "-p", env["REDIS_PORT"], "--rdb", str(folder / REDIS_FILE)],
            env=redis_client_env(env),
            what="Redis's snapshot",
        )
        say("PostgreSQL: a dump (pg_dump --format=custom)")
        with postgres_client(env) as pg_env:
            run_quietly(
                [str(pg_bindir() / "pg_dump"), "--format=custom", "--file", str(folder / POSTGRES_FILE)],
                env=pg_env,
                what="pg_dump",
            )
    write_secrets(folder / SECRETS_FILE, {name: env[name] for name in CARRIED if env.get(name)})
    certs = certs_dir(run)
    if certs.is_dir():
        (folder / CERTS).mkdir(mode=0o700)
        for cert in sorted(certs.iterdir()):
            if cert.is_file():
                copy = folder / CERTS / cert.name
                shutil.copyfile(cert, copy)
                copy.chmod(0o600)
    manifest = {
        "format": FORMAT,
        "slingshot": version(),
        "taken_at": taken_at.isoformat(timespec="seconds"),
        "run_directory": str(run),
        "stack": ("running, its edge stopped meanwhile" if stop_edge else "running") if running else "stopped",
        "files": {
            str(path.relative_to(folder)): {"bytes": path.stat().st_size, "sha256": sha256(path)}
            for path in sorted(folder.rglob("*"))
            if path.is_file()
        },
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    (folder / MANIFEST).chmod(0o600)
    return manifest


@contextlib.contextmanager
def edge_stopped(env: dict[str, str]):
    """The running stack's edge stopped (nginx's graceful stop: each worker
    sends its clicks and its counts to Redis) for the backup, then started
    again."""
    rpc = supervisor_rpc(env).supervisor
    edge_state = rpc.getProcessInfo("edge")["statename"]
    if edge_state != "RUNNING":
        say(f"the edge is {edge_state}: left as it is")
        yield
        return
    say("stopping the edge (its workers send their clicks to Redis); short links answer nothing meanwhile")
    rpc.stopProcess("edge", True)
    try:
        yield
    finally:
        rpc.startProcess("edge", True)
        say("the edge runs again")


def write_secrets(path: Path, values: dict[str, str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(
            "# Slingshot's SECRET_KEY and the settings of the run directory this backup was taken from.\n"
            "# Keep it as safe as the database: whoever has it can make YOURLS signatures and sessions.\n"
        )
        out.write("".join(f"{key}={value}\n" for key, value in values.items()))


# --- the commands -------------------------------------------------------------------


def default_target() -> Path:
    return BACKUPS / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def main_backup(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack backup", description="Back up the local stack.")
    parser.add_argument("--to", type=Path, help="the backup's folder, new (default: backups/<UTC time>)")
    parser.add_argument(
        "--stop-edge",
        action="store_true",
        help="stop the running stack's edge for the backup, so that it holds every click served and the counts "
        "of the accounting to the last one; short links answer nothing meanwhile",
    )
    args = parser.parse_args(argv)
    os.umask(0o077)  # every file of the backup, the client programs' included, for its owner only
    target = (args.to or default_target()).absolute()
    if target.parent == BACKUPS:
        BACKUPS.mkdir(mode=0o700, exist_ok=True)
    try:
        manifest = backup(run_dir(), target, stop_edge=args.stop_edge)
    except StackError as exc:
        say(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        say("interrupted: no backup was written")
        return 130
    size = sum(entry["bytes"] for entry in manifest["files"].values())
    say(
        f"backed up into {target} ({size / 1e6:.1f} MB). It holds SECRET_KEY ({SECRETS_FILE}): keep it as safe "
        f"as the database. Restore it with `make restore BACKUP={target}`"
    )
    return 0

"""PostgreSQL on this machine: its programs, a cluster made on first use and
started in the foreground, and the application's role and database."""

import os
import pwd
import shutil
import subprocess
import time
from pathlib import Path


def pg_bindir() -> Path:
    configured = os.environ.get("PG_BINDIR")
    if configured:
        return Path(configured)
    for version in ("17", "16", "15"):
        candidate = Path(f"/usr/lib/postgresql/{version}/bin")
        if (candidate / "postgres").exists():
            return candidate
    pg_config = shutil.which("pg_config")
    if pg_config:
        return Path(subprocess.check_output([pg_config, "--bindir"], text=True).strip())
    raise FileNotFoundError("PostgreSQL server binaries not found; set PG_BINDIR")


def db_owner() -> dict:
    """Popen arguments that run PostgreSQL's programs as `postgres` when we are
    root (the server refuses root). Signals then reach the server itself."""
    if os.geteuid() == 0:
        return {"user": "postgres", "group": "postgres", "extra_groups": []}
    return {}


def give_to_db_owner(path: Path) -> None:
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(path, owner.pw_uid, owner.pw_gid)


def init_postgres(datadir: Path) -> bool:
    """initdb on first use; returns True if it created the cluster."""
    if (datadir / "PG_VERSION").exists():
        return False
    datadir.mkdir(parents=True, exist_ok=True)
    datadir.chmod(0o700)
    give_to_db_owner(datadir)
    subprocess.run(
        [
            str(pg_bindir() / "initdb"),
            "-D",
            str(datadir),
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd="/",
        **db_owner(),
    )
    return True


def postgres_command(datadir: Path, port: int, *, durable: bool = True) -> list[str]:
    # The local socket trusts whoever can open it, so only the cluster's owner
    # (and root) may: unix_socket_permissions=0700. Applications use TCP with
    # a password.
    cmd = [
        str(pg_bindir() / "postgres"),
        "-D",
        str(datadir),
        "-p",
        str(port),
        "-k",
        str(datadir),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_permissions=0700",
    ]
    if not durable:  # throwaway test clusters
        cmd += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
    return cmd


def wait_for_postgres(
    datadir: Path, port: int, *, timeout: float = 60.0, process: subprocess.Popen | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"PostgreSQL exited with {process.returncode} before it was ready")
        result = subprocess.run(
            [str(pg_bindir() / "pg_isready"), "-h", str(datadir), "-p", str(port), "-U", "postgres", "-q"]
        )
        if result.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"PostgreSQL on port {port} not ready after {timeout}s")
        time.sleep(0.1)


def bootstrap_database(
    datadir: Path, port: int, *, role: str, password: str, database: str, createdb: bool = False
) -> None:
    """Creates the application's role (no superuser) and database, if missing."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(host=str(datadir), port=port, user="postgres", dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
        verb = "ALTER" if exists else "CREATE"
        conn.execute(
            sql.SQL(verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEROLE {} PASSWORD {}").format(
                sql.Identifier(role), sql.SQL("CREATEDB" if createdb else "NOCREATEDB"), sql.Literal(password)
            )
        )
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(role)))
    # Extensions need a superuser (sql/004_visitor_sketches.sql); template1
    # passes them on to databases made later, such as the tests' own.
    for dbname in ("template1", database):
        with psycopg.connect(host=str(datadir), port=port, user="postgres", dbname=dbname, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS hll")

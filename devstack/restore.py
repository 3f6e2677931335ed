"""`make restore`: a backup of `make backup` (devstack/backup.py, which
describes its files) made into a run directory of its own.

A restore makes a new run directory: the backup's SECRET_KEY and settings in
its env file, then `make run`'s own preparation (devstack/stack.py) with the
dump restored into the new, empty database before it is migrated (a backup
of an older version is upgraded as `make run` would; one of a newer version
refused), and Redis's append-only folder made with the snapshot as its base,
then every link and domain published again from PostgreSQL (which holds
those that changed between the two snapshots).
"""

import argparse
import json
import re
import shutil
import subprocess
from pathlib import Path

import devstack
from devstack import stack
from devstack.backup import (
    CARRIED,
    CERTS,
    FORMAT,
    MANIFEST,
    POSTGRES_FILE,
    REDIS_FILE,
    SECRETS_FILE,
    certs_dir,
    postgres_client,
    run_quietly,
    sha256,
    temporary_redis,
)
from devstack.envfile import read_env, read_env_file, write_env_file
from devstack.nginx import give_key_to_edge
from devstack.postgres import pg_bindir
from devstack.programs import MANAGE, run_dir
from devstack.stack import StackError, say


def checked_manifest(folder: Path) -> dict:
    """The backup's manifest, once every file it lists is there, whole."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        partial = folder.with_name(folder.name + ".partial")
        more = f" ({partial} is a backup that never finished)" if partial.exists() else ""
        raise StackError(f"{folder} is no backup: it has no {MANIFEST}{more}") from None
    except (OSError, ValueError) as exc:
        raise StackError(f"{folder / MANIFEST} cannot be read: {exc}") from None
    if manifest.get("format") != FORMAT:
        raise StackError(f"{folder} is a backup of format {manifest.get('format')!r}; this checkout reads {FORMAT}")
    for name in (REDIS_FILE, POSTGRES_FILE, SECRETS_FILE):
        if name not in manifest["files"]:
            raise StackError(f"{folder} is not a whole backup: its manifest lists no {name}")
    for name, expected in manifest["files"].items():
        path = folder / name
        if not path.is_file():
            raise StackError(f"{folder} is not a whole backup: {name} is missing")
        if path.stat().st_size != expected["bytes"] or sha256(path) != expected["sha256"]:
            raise StackError(f"{path} is not the file the backup wrote (its size or SHA-256 differs): it is damaged")
    return manifest


def restore(folder: Path, run: Path) -> dict[str, str]:
    """Makes the run directory `run` (new, or without a stack's data) from
    the backup in `folder`; returns the restored stack's environment."""
    manifest = checked_manifest(folder)
    stack.refuse_if_running(run)
    if (run / "pg" / "PG_VERSION").exists() or (run / "redis" / "appendonlydir").exists():
        raise StackError(
            f"{run} holds a stack's data already, which a restore does not overwrite: restore into a new run "
            f"directory (SLINGSHOT_RUN_DIR=<a new folder> make restore BACKUP=...), or move this one aside first "
            f"(mv {run} {run}.old)"
        )
    say(f"restoring the backup of {manifest['run_directory']} taken {manifest['taken_at']} into {run}")
    carried = read_env(folder / SECRETS_FILE)
    if not carried.get("SECRET_KEY"):
        raise StackError(f"{folder / SECRETS_FILE} holds no SECRET_KEY")
    run.mkdir(parents=True, exist_ok=True)
    # The run directory is made as `make run` makes it, with what the backup carries
    # (its SECRET_KEY, ports and admin) where `make run` looks for what it had.
    write_env_file(run, {**read_env_file(run), **{k: v for k, v in carried.items() if k in CARRIED}})
    if (folder / CERTS).is_dir():
        restore_certs(folder / CERTS, certs_dir(run))
    try:
        env, _ = stack.prepare(
            run,
            fill_database=lambda env: restore_postgres(folder / POSTGRES_FILE, env),
            finish=lambda env: restore_redis(folder / REDIS_FILE, run, env),
            command=f"make restore BACKUP={folder}",
        )
    except (StackError, stack.Interrupted) as exc:
        if (run / "pg").exists():  # made by this restore: the run directory held no data
            left = f"{run} is left as the restore left it: remove it (rm -rf {run}) before restoring into it again"
            if isinstance(exc, StackError):
                raise StackError(f"{exc}\n  {left}") from None
            say(left)
        raise
    return env


def restore_certs(source: Path, certs: Path) -> None:
    certs.mkdir(parents=True, exist_ok=True)
    for cert in sorted(source.iterdir()):
        copy = certs / cert.name
        shutil.copyfile(cert, copy)
        if cert.suffix == ".key":
            give_key_to_edge(copy)
        else:
            copy.chmod(0o644)


def restore_postgres(dump: Path, env: dict[str, str]) -> None:
    """The dump into the new database as the application's role, in one
    transaction: all of it, or nothing and why. The database has its
    extensions already (devstack.postgres.bootstrap_database makes them as the
    superuser); their comments, which only their owner may set, are left
    out (the schema has no other)."""
    say(f"PostgreSQL: restoring {dump.name}")
    with postgres_client(env) as pg_env:
        try:
            run_quietly(
                [
                    str(pg_bindir() / "pg_restore"),
                    "--dbname",
                    pg_env["PGDATABASE"],
                    "--no-owner",
                    "--no-comments",
                    "--single-transaction",
                    "--exit-on-error",
                    str(dump),
                ],
                env=pg_env,
                what=f"pg_restore of {dump}",
            )
        except StackError as exc:
            raise StackError(f"{exc}\n  Nothing of it was restored: pg_restore runs in one transaction.") from None


def restore_redis(snapshot: Path, run: Path, env: dict[str, str]) -> None:
    """The snapshot made the base of Redis's append-only file (Redis 7
    keeps it as a folder: a base file, RDB or AOF, then the writes since,
    named in a manifest), loaded by the stack's Redis; then every link and
    domain published again from PostgreSQL, which has the ones changed
    between the two snapshots."""
    found = re.search(
        r"\bv=(\d+)\.", subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    )
    if not found or int(found.group(1)) < 7:
        raise StackError("restoring Redis needs Redis 7 or later (its append-only folder); bin/setup installs it")
    say(f"Redis: {snapshot.name} as the base of its append-only file")
    aof = run / "redis" / "appendonlydir"
    aof.mkdir(parents=True)
    shutil.copyfile(snapshot, aof / "appendonly.aof.1.base.rdb")
    (aof / "appendonly.aof.manifest").write_text("file appendonly.aof.1.base.rdb seq 1 type b\n")
    with temporary_redis(run, env) as client:
        say("publishing every link and domain from PostgreSQL (manage.py publish_links --all)")
        stack.step([*MANAGE, "publish_links", "--all"], env=env, what="manage.py publish_links --all")
        stack.step([*MANAGE, "publish_links", "--check"], env=env, what="manage.py publish_links --check")
        say(f"restored: {restored_counts(env, client)}")


def restored_counts(env: dict[str, str], client) -> str:
    """What the restored stack holds, in a few numbers."""
    import psycopg

    with psycopg.connect(env["DATABASE_URL"], connect_timeout=10) as conn:
        links, clicks, tokens = conn.execute(
            "SELECT (SELECT count(*) FROM links_link), (SELECT coalesce(sum(clicks), 0) FROM link_click_totals), "
            "(SELECT count(*) FROM api_apitoken WHERE revoked_at IS NULL)"
        ).fetchone()
    return f"{links} links, {clicks} clicks stored, {tokens} API tokens; {client.dbsize()} keys in Redis"


def main_restore(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devstack restore",
        description="Make a run directory (SLINGSHOT_RUN_DIR, default .run) from a backup of `make backup`.",
    )
    parser.add_argument("backup", type=Path, help="the backup's folder")
    args = parser.parse_args(argv)
    run = run_dir()
    stack.StopSignals()
    try:
        env = restore(args.backup.absolute(), run)
    except StackError as exc:
        say(f"error: {exc}")
        return 1
    except stack.Interrupted:
        return 130
    shown = "" if run == devstack.REPO / ".run" else f"SLINGSHOT_RUN_DIR={run} "
    say(f"restored into {run}: start it with `{shown}make run` (short links on port {env['EDGE_PORT']})")
    return 0

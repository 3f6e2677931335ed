"""`make restore` refusing what it cannot restore, each with a sentence and
exit status 1, not a traceback. A backup restored whole, and the stack
started on it, is tests/test_stack.py's (it shares that file's stack)."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import devstack
from devstack.backup import FORMAT, MANIFEST, POSTGRES_FILE, REDIS_FILE, SECRETS_FILE
from devstack.envfile import read_env, read_env_file
from devstack.net import free_port
from devstack.supervised import PASSED_ON


@pytest.fixture
def root():
    # Not pytest's tmp_path: PostgreSQL runs as `postgres`, which cannot enter it.
    made = Path(tempfile.mkdtemp(prefix="slingshot-restore-"))
    made.chmod(0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


PORTS = ("DASHBOARD_PORT", "EDGE_PORT", "EDGE_TLS_PORT", "POSTGRES_PORT", "REDIS_PORT")


def fake_backup(folder: Path) -> Path:
    """A folder that passes for a backup of `make backup` as far as its
    manifest goes, taken from a stack on free ports."""
    folder.mkdir(mode=0o700)
    (folder / POSTGRES_FILE).write_bytes(b"not a dump")
    (folder / REDIS_FILE).write_bytes(b"REDIS0010")
    ports = "".join(f"{name}={free_port()}\n" for name in PORTS)
    (folder / SECRETS_FILE).write_text(f"SECRET_KEY=kept-from-the-old-stack\nSLINGSHOT_ADMIN_USER=ops\n{ports}")
    files = {
        path.name: {"bytes": path.stat().st_size, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
        for path in folder.iterdir()
    }
    manifest = {"format": FORMAT, "taken_at": "2026-11-28T12:00:00+00:00", "run_directory": "/old/run", "files": files}
    (folder / MANIFEST).write_text(json.dumps(manifest))
    return folder


def restore(backup: Path, run: Path) -> tuple[int, str]:
    """`make restore` as a person runs it: no port given, so those of the backup."""
    env = {**{name: os.environ[name] for name in PASSED_ON if name in os.environ}, "SLINGSHOT_RUN_DIR": str(run)}
    result = subprocess.run(
        [sys.executable, "-m", "devstack", "restore", str(backup)],
        cwd=devstack.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    return result.returncode, output


def test_a_folder_that_is_no_whole_backup_is_refused_before_anything_is_made(root):
    run = root / "run"
    status, output = restore(root / "nothing-here", run)
    assert status == 1 and "is no backup: it has no manifest.json" in output, output

    backup = fake_backup(root / "backup")
    (backup / REDIS_FILE).write_bytes(b"REDIS0011")  # as long, another content
    status, output = restore(backup, run)
    assert status == 1 and f"{backup / REDIS_FILE} is not the file the backup wrote" in output, output

    (backup / REDIS_FILE).unlink()
    status, output = restore(backup, run)
    assert status == 1 and "is not a whole backup: redis.rdb is missing" in output, output
    assert not run.exists()


def test_a_run_directory_with_data_is_not_overwritten(root):
    run = root / "run"
    (run / "pg").mkdir(parents=True)
    (run / "pg" / "PG_VERSION").write_text("15\n")
    status, output = restore(fake_backup(root / "backup"), run)
    assert status == 1, output
    assert f"{run} holds a stack's data already" in output and f"mv {run} {run}.old" in output, output
    assert "rm -rf" not in output, output
    assert sorted(path.name for path in run.iterdir()) == ["pg"]


def test_a_dump_pg_restore_cannot_read_says_so_and_restores_nothing(root):
    run = root / "run"
    status, output = restore(fake_backup(root / "backup"), run)
    assert status == 1, output
    assert f"pg_restore of {root / 'backup' / POSTGRES_FILE} failed (exit status 1)" in output, output
    assert "input file does not appear to be a valid archive" in output, output
    assert "Nothing of it was restored" in output, output
    assert f"remove it (rm -rf {run}) before restoring into it again" in output, output
    # The backup's SECRET_KEY and ports are where `make run` reads them.
    kept = read_env(root / "backup" / SECRETS_FILE)
    assert {name: read_env_file(run)[name] for name in kept} == kept

"""A private MariaDB server for the tests of the YOURLS importer: Debian's
`mariadb-server` (bin/setup installs it), its own data directory in a
temporary folder, reached only through a unix socket there (no network),
run as the `mysql` user when the tests run as root. Its `mariadb-dump`
writes the dumps a YOURLS site's backup is."""

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

START_TIMEOUT = 30.0  # seconds for the server to answer on its socket


def _owner() -> dict:
    """Popen arguments that run the server as `mysql` when we are root."""
    if os.geteuid() == 0:
        return {"user": "mysql", "group": "mysql", "extra_groups": []}
    return {}


class MariaDB:
    """`start()`, then `sql(...)` and `dump(...)`; `stop()` removes it all."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="slingshot-mariadb-"))
        self.root.chmod(0o755)
        self.datadir = self.root / "data"
        self.run = self.root / "run"  # the socket's folder, the server's own
        self.socket = self.run / "mariadb.sock"
        self.process: subprocess.Popen | None = None

    def _server_options(self) -> list[str]:
        # A small InnoDB: the test's tables hold a few hundred rows.
        return [
            "--no-defaults",
            f"--datadir={self.datadir}",
            "--innodb-buffer-pool-size=16M",
            "--innodb-log-file-size=4M",
        ]

    def start(self) -> None:
        self.run.mkdir(mode=0o700)
        if os.geteuid() == 0:
            mysql = pwd.getpwnam("mysql")
            os.chown(self.run, mysql.pw_uid, mysql.pw_gid)
        user = ["--user=mysql"] if os.geteuid() == 0 else []
        subprocess.run(
            [
                "mariadb-install-db",
                *self._server_options(),
                *user,
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        self.process = subprocess.Popen(
            [
                "mariadbd",
                *self._server_options(),
                f"--socket={self.socket}",
                "--skip-networking",
                f"--pid-file={self.run / 'mariadbd.pid'}",
                "--log-error=" + str(self.root / "error.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # it writes to --log-error
            start_new_session=True,
            **_owner(),
        )
        deadline = time.monotonic() + START_TIMEOUT
        while self._client("SELECT 1").returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                error = (self.root / "error.log").read_text(errors="replace")[-2000:]
                self.stop()
                raise RuntimeError(f"mariadbd did not start within {START_TIMEOUT}s:\n{error}")
            time.sleep(0.1)

    def _client(self, sql: str, database: str = "") -> subprocess.CompletedProcess:
        # utf8mb4, as YOURLS connects: the client's default would refuse emoji.
        command = [
            "mariadb",
            "--no-defaults",
            f"--socket={self.socket}",
            "--user=root",
            "--default-character-set=utf8mb4",
            "--batch",
        ]
        return subprocess.run([*command, *([database] if database else [])], input=sql.encode(), capture_output=True)

    def sql(self, sql: str, *, database: str = "") -> str:
        """Runs the statements; what they printed. A failure raises, saying MariaDB's error."""
        done = self._client(sql, database)
        if done.returncode != 0:
            raise RuntimeError(f"mariadb failed: {done.stderr.decode(errors='replace')}")
        return done.stdout.decode()

    def dump(self, database: str, *options: str) -> bytes:
        """The database as `mariadb-dump OPTIONS DATABASE` writes it."""
        done = subprocess.run(
            ["mariadb-dump", "--no-defaults", f"--socket={self.socket}", "--user=root", *options, database],
            capture_output=True,
            timeout=60,
        )
        if done.returncode != 0:
            raise RuntimeError(f"mariadb-dump failed: {done.stderr.decode(errors='replace')}")
        return done.stdout

    def version(self) -> str:
        return self.sql("SELECT VERSION()").split()[-1]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)

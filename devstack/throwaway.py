"""Throwaway PostgreSQL and Redis, for the tests (devstack/pytest_plugin.py)
and the benchmarks (loadtest/)."""

import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from devstack.dashboard import gunicorn_command
from devstack.net import free_port, wait_for_answer, wait_for_port
from devstack.postgres import bootstrap_database, db_owner, init_postgres, postgres_command, wait_for_postgres
from devstack.redis import redis_command


class ThrowawayStack:
    """PostgreSQL and Redis on free ports in a temporary folder, for tests and
    benchmarks. `durable=False` trades crash safety for speed (tests)."""

    def __init__(self, *, prefix: str = "slingshot-", durable: bool = False) -> None:
        self.durable = durable
        self.processes: list[subprocess.Popen] = []
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        self.root.chmod(0o755)  # PostgreSQL runs as `postgres` when we are root
        self.pg_dir = self.root / "pg"
        self.pg_port = free_port()
        self.redis_port = free_port()
        self.redis_password = "test-redis-password"
        self.redis_dir = self.root / "redis"

    def start(self) -> None:
        """Both servers, or neither: what started is stopped if the rest fails."""
        try:
            init_postgres(self.pg_dir)
            self.postgres = self._spawn(
                postgres_command(self.pg_dir, self.pg_port, durable=self.durable), "postgres", **db_owner()
            )
            self.start_redis()
            wait_for_postgres(self.pg_dir, self.pg_port)
            bootstrap_database(
                self.pg_dir, self.pg_port, role="slingshot", password="test", database="slingshot", createdb=True
            )
        except BaseException:
            self.cleanup()
            raise

    def start_redis(self, *, durable: bool | None = None) -> subprocess.Popen:
        durable = self.durable if durable is None else durable
        cmd = redis_command(self.redis_dir, self.redis_port, password=self.redis_password, durable=durable)
        self.redis = self._spawn(cmd, "redis")
        wait_for_port(self.redis_port, process=self.redis)
        return self.redis

    def stop_redis(self) -> None:
        self.redis.terminate()
        self.redis.wait(timeout=30)

    def stop_postgres(self) -> None:
        """Fast shutdown: clients are disconnected."""
        self.postgres.send_signal(signal.SIGINT)
        self.postgres.wait(timeout=30)

    def start_postgres(self) -> None:
        """Starts it again after stop_postgres, and waits until it is ready."""
        self.postgres = self._spawn(
            postgres_command(self.pg_dir, self.pg_port, durable=self.durable), "postgres", **db_owner()
        )
        wait_for_postgres(self.pg_dir, self.pg_port)

    def restart_postgres(self) -> None:
        """Fast shutdown (clients are disconnected), then start again and wait until ready."""
        self.stop_postgres()
        self.start_postgres()

    def start_dashboard(self, env: dict[str, str], *, workers: int = 2) -> int:
        """gunicorn on a free port with this environment, once a worker
        answers; returns the port. It stops with the stack (cleanup)."""
        port = free_port()
        process = self._spawn(gunicorn_command(port, workers=workers), "gunicorn", env=env)
        wait_for_answer(port, process=process)
        return port

    def _spawn(self, cmd: list[str], name: str, **popen) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "ab")
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **popen)
        self.processes.append(process)
        return process

    def environment(self) -> dict[str, str]:
        return {
            "SLINGSHOT_ENV_FILE": "",
            "SECRET_KEY": "test-only-secret-key",
            "EDGE_DASHBOARD_SECRET": "test-only-edge-dashboard-secret",
            "DATABASE_URL": f"postgres://slingshot:test@127.0.0.1:{self.pg_port}/slingshot",
            "REDIS_HOST": "127.0.0.1",
            "REDIS_PORT": str(self.redis_port),
            "REDIS_PASSWORD": self.redis_password,
            "REDIS_DB": "0",
        }

    def cleanup(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                # PostgreSQL's fast shutdown (SIGINT) ends the sessions still
                # open, such as the benchmark's own Django connection; its
                # smart shutdown (SIGTERM) would wait for them until killed
                # below, leaving its shared memory in /dev/shm.
                process.send_signal(signal.SIGINT if Path(process.args[0]).name == "postgres" else signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(self.root, ignore_errors=True)

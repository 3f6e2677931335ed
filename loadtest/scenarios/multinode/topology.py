"""The hosts of the multinode scenario, each a process on this machine
(loadtest/scenarios/multinode/__init__.py): their ports, secrets and
folders, what each is told, and how each is started and stopped."""

import os
import secrets
import shutil
import signal
import subprocess
import sys
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import devstack
from devstack.dashboard import gunicorn_command
from devstack.edge import edge_command, render_edge_conf
from devstack.net import free_port, wait_for_port
from devstack.postgres import (
    bootstrap_database,
    db_owner,
    give_to_db_owner,
    init_postgres,
    pg_bindir,
    postgres_command,
    wait_for_postgres,
)
from devstack.redis import redis_command

MANAGE = [sys.executable, str(devstack.REPO / "dashboard" / "manage.py")]
MASTER_NAME = "slingshot"
PIN_SECONDS = 1.0  # a person's lists read the primary this long after their write (slingshot/db.py)


class Process:
    """One program standing in for a host's service, with its log file."""

    def __init__(self, name: str, cmd: list[str], *, log_dir: Path, env: dict | None = None, **popen) -> None:
        self.name, self.cmd, self.env, self.popen = name, cmd, env, popen
        self.log_path = log_dir / f"{name}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> "Process":
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            self.cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=self.env, **self.popen
        )
        log.close()
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def send(self, sig: int) -> None:
        if self.alive():
            os.killpg(self.process.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        if not self.alive():
            return
        self.send(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.send(signal.SIGKILL)
            self.process.wait(timeout=10)


@dataclass
class Topology:
    """Ports, secrets and folders of every piece; `start()` brings them up."""

    root: Path
    edges: int = 2
    importer_hosts: int = 2
    durable: bool = False
    redis_password: str = field(default_factory=lambda: secrets.token_hex(16))
    db_password: str = field(default_factory=lambda: secrets.token_hex(16))
    replication_password: str = field(default_factory=lambda: secrets.token_hex(16))
    edge_dashboard_secret: str = field(default_factory=lambda: secrets.token_hex(16))
    processes: dict[str, Process] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.logs = self.root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.redis_ports = {name: free_port() for name in ("redis-a", "redis-b", "redis-c")}
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.store_ports = {f"clicks{n}": free_port() for n in range(1, self.edges + 1)}
        self.pg_port, self.pg_replica_port = free_port(), free_port()
        self.edge_ports = [free_port() for _ in range(self.edges)]
        self.dashboard_port = free_port()

    # --- what each piece is told -----------------------------------------------------------

    def database_url(self, port: int) -> str:
        return f"postgres://slingshot:{self.db_password}@127.0.0.1:{port}/slingshot"

    def django_env(self) -> dict[str, str]:
        stores = ",".join(
            f"{name}=redis://:{self.redis_password}@127.0.0.1:{port}/0" for name, port in self.store_ports.items()
        )
        return {
            **os.environ,
            "SLINGSHOT_ENV_FILE": "",
            "DJANGO_SETTINGS_MODULE": "slingshot.settings",
            "SECRET_KEY": secrets.token_hex(32),
            "EDGE_DASHBOARD_SECRET": self.edge_dashboard_secret,
            "DATABASE_URL": self.database_url(self.pg_port),
            "DATABASE_REPLICA_URL": self.database_url(self.pg_replica_port),
            "REDIS_PASSWORD": self.redis_password,
            "REDIS_SENTINELS": ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports),
            "REDIS_SENTINEL_MASTER": MASTER_NAME,
            "REDIS_WAIT_REPLICAS": "1",
            "REDIS_WAIT_TIMEOUT_MS": "500",
            "CLICK_STORES": stores,
            "EDGE_BASE_URL": f"http://127.0.0.1:{self.edge_ports[0]}",
            "DATABASE_REPLICA_PIN_SECONDS": str(PIN_SECONDS),
        }

    def edge_env(self, n: int) -> dict[str, str]:
        """Edge n (0-based) reads links from replica n+1 and writes clicks to store n+1."""
        replica = list(self.redis_ports.values())[1 + n % 2]
        return {
            **os.environ,
            "REDIS_PASSWORD": self.redis_password,
            "REDIS_SENTINELS": ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports),
            "REDIS_SENTINEL_MASTER": MASTER_NAME,
            "EDGE_LINKS_REDIS_HOST": "127.0.0.1",
            "EDGE_LINKS_REDIS_PORT": str(replica),
            "EDGE_CLICKS_REDIS_HOST": "127.0.0.1",
            "EDGE_CLICKS_REDIS_PORT": str(self.store_ports[f"clicks{n + 1}"]),
            "EDGE_DASHBOARD_URL": f"http://127.0.0.1:{self.dashboard_port}",
            "EDGE_DASHBOARD_SECRET": self.edge_dashboard_secret,
        }

    # --- starting --------------------------------------------------------------------------

    def spawn(self, name: str, cmd: list[str], **kwargs) -> Process:
        process = Process(name, cmd, log_dir=self.logs, **kwargs).start()
        self.processes[name] = process
        return process

    def start_redis(self, name: str, port: int, *, extra: tuple[str, ...] = (), appendfsync="everysec") -> None:
        cmd = redis_command(
            self.root / name,
            port,
            password=self.redis_password,
            durable=True,
            appendfsync=appendfsync,
            extra=("masterauth " + self.redis_password, *extra),
        )
        wait_for_port(port, process=self.spawn(name, cmd).process)

    def start_sentinel(self, n: int, port: int) -> None:
        folder = self.root / f"sentinel{n}"
        folder.mkdir(parents=True, exist_ok=True)
        conf = folder / "sentinel.conf"  # Sentinel rewrites it with what it learns
        conf.touch(mode=0o600)
        primary = self.redis_ports["redis-a"]
        conf.write_text(
            "\n".join(
                [
                    f"port {port}",
                    "bind 127.0.0.1",
                    f'dir "{folder}"',
                    "daemonize no",
                    "loglevel notice",
                    f"sentinel monitor {MASTER_NAME} 127.0.0.1 {primary} 2",
                    f"sentinel auth-pass {MASTER_NAME} {self.redis_password}",
                    f"sentinel down-after-milliseconds {MASTER_NAME} 1000",
                    f"sentinel failover-timeout {MASTER_NAME} 5000",
                    f"sentinel parallel-syncs {MASTER_NAME} 2",
                ]
            )
            + "\n"
        )
        redis_server = shutil.which("redis-server") or "redis-server"
        wait_for_port(port, process=self.spawn(f"sentinel{n}", [redis_server, str(conf), "--sentinel"]).process)

    def start_postgres(self) -> None:
        primary_dir = self.root / "pg"
        init_postgres(primary_dir)
        cmd = postgres_command(primary_dir, self.pg_port, durable=self.durable)
        process = self.spawn("postgres", cmd, **db_owner()).process
        wait_for_postgres(primary_dir, self.pg_port, process=process)
        bootstrap_database(primary_dir, self.pg_port, role="slingshot", password=self.db_password, database="slingshot")
        import psycopg
        from psycopg import sql

        with psycopg.connect(
            host=str(primary_dir), port=self.pg_port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(
                sql.SQL("CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD {}").format(
                    sql.Literal(self.replication_password)
                )
            )
        replica_dir = self.root / "pg-replica"
        replica_dir.mkdir(mode=0o700)
        give_to_db_owner(replica_dir)
        passfile = self.root / "pgpass"
        passfile.write_text(f"127.0.0.1:{self.pg_port}:*:replicator:{self.replication_password}\n")
        passfile.chmod(0o600)
        give_to_db_owner(passfile)
        subprocess.run(
            [
                str(pg_bindir() / "pg_basebackup"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.pg_port),
                "-U",
                "replicator",
                "-D",
                str(replica_dir),
                "-R",  # standby.signal and primary_conninfo: a streaming replica
                "-X",
                "stream",
                "-c",
                "fast",
            ],
            env={**os.environ, "PGPASSFILE": str(passfile)},
            check=True,
            capture_output=True,
            cwd="/",
            **db_owner(),
        )
        cmd = postgres_command(replica_dir, self.pg_replica_port, durable=self.durable)
        process = self.spawn("postgres-replica", cmd, **db_owner()).process
        wait_for_postgres(replica_dir, self.pg_replica_port, process=process)

    def manage(self, *args: str, env: dict | None = None, timeout: float = 300) -> str:
        return subprocess.run(
            [*MANAGE, *args],
            env=env or self.django_env(),
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
        ).stdout

    def start_edge(self, n: int) -> None:
        prefix = self.root / f"edge{n + 1}"
        render_edge_conf(prefix, self.edge_ports[n])
        process = self.spawn(f"edge{n + 1}", edge_command(prefix, workers=2), env=self.edge_env(n))
        wait_for_port(self.edge_ports[n], process=process.process)

    def importer_names(self, host: int) -> list[str]:
        return [f"importer{host}-{store}" for store in ("primary", *self.store_ports)]

    def start_importer_host(self, host: int) -> None:
        for name, store in zip(self.importer_names(host), ("primary", *self.store_ports), strict=True):
            self.spawn(
                name,
                [*MANAGE, "import_clicks", "--store", store, "--consumer", f"host{host}", "--claim-idle-ms", "3000"],
                env=self.django_env(),
            )

    def start(self, log=print) -> None:
        ports = self.redis_ports
        self.start_redis("redis-a", ports["redis-a"])
        for name in ("redis-b", "redis-c"):
            self.start_redis(name, ports[name], extra=(f"replicaof 127.0.0.1 {ports['redis-a']}",))
        for n, port in enumerate(self.sentinel_ports, 1):
            self.start_sentinel(n, port)
        for name, port in self.store_ports.items():
            self.start_redis(name, port, appendfsync="always")  # an edge's clicks live only here until imported
        log(
            f"redis: primary {ports['redis-a']}, replicas {ports['redis-b']} {ports['redis-c']}, sentinels "
            f"{' '.join(map(str, self.sentinel_ports))}, click stores {' '.join(map(str, self.store_ports.values()))}"
        )
        self.start_postgres()
        log(f"postgresql: primary {self.pg_port}, streaming replica {self.pg_replica_port}")
        self.manage("migrate", "--no-input")
        self.manage("ensure_admin", env={**self.django_env(), "SLINGSHOT_ADMIN_PASSWORD": secrets.token_hex(16)})
        self.spawn("publisher", [*MANAGE, "run_publisher"], env=self.django_env())
        for host in range(1, self.importer_hosts + 1):
            self.start_importer_host(host)
        dashboard = self.spawn("dashboard", gunicorn_command(self.dashboard_port, workers=2), env=self.django_env())
        wait_for_port(self.dashboard_port, process=dashboard.process)
        for n in range(self.edges):
            self.start_edge(n)
        log(f"edges: {' '.join(map(str, self.edge_ports))}; dashboard: {self.dashboard_port}")

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            process.stop(signal.SIGQUIT if process.name.startswith("edge") else signal.SIGTERM)

    # --- asking the pieces -------------------------------------------------------------------

    def sentinel_primary(self) -> int | None:
        """The primary's port as the first answering Sentinel names it."""
        import redis

        for port in self.sentinel_ports:
            with suppress(redis.RedisError):
                reply = redis.Redis(
                    port=port, socket_timeout=1, socket_connect_timeout=1
                ).sentinel_get_master_addr_by_name(MASTER_NAME)
                if reply:
                    return int(reply[1])
        return None

    def primary_writable(self, port: int) -> bool:
        import redis

        with suppress(redis.RedisError):
            client = redis.Redis(port=port, password=self.redis_password, socket_timeout=1, socket_connect_timeout=1)
            return client.info("replication")["role"] == "master" and client.set("multinode:probe", "1") is True
        return False

    def redis_process_on(self, port: int) -> Process:
        name = next(name for name, p in self.redis_ports.items() if p == port)
        return self.processes[name]

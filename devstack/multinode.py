"""Slingshot across several hosts, on one machine: processes stand in for
hosts (`make multinode`, tests/test_multinode.py, docs/scale-out.md).

- Redis: a primary, two replicas and three Sentinels, for links and their
  change feed; and one click store per edge, a Redis of the edge's own.
- PostgreSQL: a primary and a streaming replica that reports read.
- Two edges, each reading links from its own replica, writing clicks to its
  own store, and finding the primary (visit limits) through the Sentinels.
- Two importer hosts, each running one `import_clicks --store` per click
  store; a store's importers share its consumer group.
- The publisher, which waits for a replica (WAIT) before a change counts as
  delivered, and the dashboard; both find the primary through the Sentinels.

`Scenario.run` sends visitors to both edges, to a plain link and to one with
a visit limit (each of its visits asks the primary, found through the
Sentinels), kills the Redis primary and keeps it away (`away` seconds) while
Sentinel promotes a replica, changes a link and makes a new one while there
is no primary, holds the new primary's replica still so that the
publisher's WAIT fails and is retried, kills one importer host while one of
its batches is open, restarts one edge, and then waits until every redirect
served is one click stored.
"""

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import devstack
from devstack import (
    bootstrap_database,
    db_owner,
    edge_command,
    free_port,
    gunicorn_command,
    init_postgres,
    pg_bindir,
    postgres_command,
    redis_command,
    render_edge_conf,
    wait_for_port,
    wait_for_postgres,
)
from devstack.faults import Visitors, request
from devstack.supervised import wait_until

MANAGE = [sys.executable, str(devstack.REPO / "dashboard" / "manage.py")]
MASTER_NAME = "slingshot"
PROBES = 4  # connections to each edge that must all serve a link (Scenario.every_edge_serves)
SETTLE = 0.5  # seconds: more than two EDGE_LINK_CHANGES_INTERVAL (0.2 s)
PIN_SECONDS = 1.0  # a person's lists read the primary this long after their write (slingshot/db.py)
LIMIT = 10**9  # the limited link's max_visits: never reached, but each visit is counted on the primary
LOCKED = "multinode-locked"
PASSWORD = "multinode password"  # the locked link's: a visitor's pass through it is kept on the primary


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
        devstack.give_to_db_owner(replica_dir)
        passfile = self.root / "pgpass"
        passfile.write_text(f"127.0.0.1:{self.pg_port}:*:replicator:{self.replication_password}\n")
        passfile.chmod(0o600)
        devstack.give_to_db_owner(passfile)
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


@dataclass
class Result:
    served: dict[str, int] = field(default_factory=dict)  # per edge
    stored: int = 0
    duplicates: int = 0
    reports_on_replica: bool = False
    own_change_listed: bool = False  # at once, with the replica's replay paused
    replica_listed_after_pin: bool = False  # the replica's older title once the pin was over
    without_primary: float = 0.0
    change_seen_after: float = 0.0  # from the change
    change_seen_after_promotion: float = 0.0  # from the new primary taking writes
    failure_times: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # per edge and kind: s from the kill
    away: float = 0.0  # seconds the old primary was away
    restarted_at: float = 0.0  # when an edge was restarted, s from the kill: a fault of its own
    # The limited link: its visits per edge, what failed (s from the kill),
    # and the visits the new primary counted while the old one was away.
    limited_served: dict[str, int] = field(default_factory=dict)
    limited_failures: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    limited_counted_on_new_primary: int = 0
    # The link made while there was no primary: what each edge answered
    # before serving it, and how long after the promotion all of them did.
    new_link_answers: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    new_link_served_after_promotion: float = 0.0
    importer_pending_at_kill: int = 0  # entries the killed importers had read and not stored
    # The locked link, tried on each edge every 0.1 s from the kill of the
    # primary: how long after the promotion a visitor got through (the pass
    # made and taken on the new primary), and what the tries before ended at.
    passes_after_promotion: dict[str, float] = field(default_factory=dict)
    passes_refused: Counter = field(default_factory=Counter)
    wait_retries: int = 0  # the publisher's deliveries refused for too few replicas, then retried
    notes: list[str] = field(default_factory=list)

    @property
    def total_served(self) -> int:
        return sum(self.served.values())

    @property
    def reconciled(self) -> bool:
        return (
            self.total_served == self.stored
            and self.duplicates == 0
            and all(self.served.values())
            and self.reports_on_replica
            and self.own_change_listed
            and self.replica_listed_after_pin
        )

    @property
    def held_up(self) -> bool:
        """What issue 29 asks of a failover: no failed visit to the plain
        link on any edge, the change followed within 1.5 s of the promotion,
        the limited link counted by the new primary, an importer killed with
        a batch open, a WAIT refused and retried, and a visitor through the
        password link on every edge within 1.5 s of the promotion."""
        return (
            all(self.failed_in_failover(edge) == 0 for edge in self.failure_times)
            and self.change_seen_after_promotion < 1.5
            and self.limited_counted_on_new_primary > 0
            and self.importer_pending_at_kill > 0
            and self.wait_retries > 0
            and len(self.passes_after_promotion) == len(self.failure_times)
            and max(self.passes_after_promotion.values()) < 1.5
        )

    def failed_visits(self, edge: str) -> int:
        return sum(len(times) for times in self.failure_times[edge].values())

    def failed_in_failover(self, edge: str) -> int:
        """Failed visits from the kill of the primary until an edge was restarted."""
        return sum(1 for times in self.failure_times[edge].values() for at in times if at < self.restarted_at)

    @property
    def taken_for_unknown(self) -> int:
        """Visits to an existing link, or the link made in the failover, that an edge answered 404."""
        return sum(
            len(times.get("HTTP 404", []))
            for kinds in (self.failure_times, self.limited_failures, self.new_link_answers)
            for times in kinds.values()
        )

    def lines(self) -> list[str]:
        served = ", ".join(f"{edge} {count}" for edge, count in self.served.items())
        return [
            f"redirects served: {served}; clicks stored: {self.stored}; duplicates: {self.duplicates}",
            f"failed visits: {', '.join(f'{edge} {self.failed_visits(edge)}' for edge in self.failure_times)}; "
            "from the kill of the primary until an edge was restarted: "
            + ", ".join(f"{edge} {self.failed_in_failover(edge)}" for edge in self.failure_times),
            f"visits to the existing link answered 404: {self.taken_for_unknown}",
            f"link report read from the PostgreSQL replica: {'yes' if self.reports_on_replica else 'NO'}",
            "a change listed at once to who made it, the replica paused: "
            f"{'yes' if self.own_change_listed else 'NO'}; the list read the replica "
            f"{PIN_SECONDS:g} s later: {'yes' if self.replica_listed_after_pin else 'NO'}",
            f"seconds without a working Redis primary: {self.without_primary:.2f}",
            f"seconds until every edge served the link changed during the failover: {self.change_seen_after:.2f} "
            f"({self.change_seen_after_promotion:.2f} after the new primary took writes)",
            f"seconds the old primary was away, under traffic: {self.away:.1f}",
            "visit-limited link (asks the primary through the Sentinels): served "
            + ", ".join(f"{edge} {n}" for edge, n in self.limited_served.items())
            + "; failed "
            + ", ".join(f"{e} {sum(map(len, t.values()))}" for e, t in self.limited_failures.items())
            + f"; visits counted by the new primary: {self.limited_counted_on_new_primary}",
            "the link made with no primary, before every edge served it: "
            + "; ".join(
                f"{edge} " + (", ".join(f"{what} ×{len(at)}" for what, at in sorted(answers.items())) or "nothing else")
                for edge, answers in self.new_link_answers.items()
            )
            + f"; served by every edge {self.new_link_served_after_promotion:.2f} s after the promotion",
            "a visitor through the locked link (its pass kept on the new primary), s after the promotion: "
            + ", ".join(f"{edge} {at:.2f}" for edge, at in self.passes_after_promotion.items())
            + "; tries before: "
            + (", ".join(f"{what} ×{n}" for what, n in sorted(self.passes_refused.items())) or "none"),
            f"entries the killed importer host had read and not yet stored: {self.importer_pending_at_kill}",
            f"publisher deliveries refused by WAIT (too few replicas) and retried: {self.wait_retries}",
            *self.notes,
            f"reconciled: {self.stored}/{self.total_served}",
        ]


def failure_times(failures: list[tuple[float, str]], since: float) -> dict[str, list[float]]:
    """What failed visits saw, each with when, in seconds from `since`."""
    times: dict[str, list[float]] = {}
    for at, what in failures:
        times.setdefault(what, []).append(at - since)
    return times


class Scenario:
    def __init__(self, topology: Topology, *, rate: float = 200.0, log=print) -> None:
        self.topology = topology
        self.rate = rate
        self.log = log
        self.token = topology.manage("create_api_token", "admin", "--scope", "write", "--name", "multinode").strip()
        self.result = Result()
        self.killed_at = time.monotonic()  # when fail_over killed the primary
        self.probes: dict[tuple[int, str], int] = {}  # (edge, slug): redirects served to our own checks

    def api(self, path: str, *, method: str = "GET", body: dict | None = None) -> tuple[int, dict]:
        status, raw = request(self.topology.dashboard_port, path, method=method, body=body, token=self.token)
        return status, json.loads(raw or b"{}")

    def location(self, n: int, slug: str) -> str | None:
        import http.client

        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.topology.edge_ports[n], timeout=2)
            conn.request("GET", f"/{slug}")
            response = conn.getresponse()
            response.read()
            conn.close()
            return response.getheader("Location") if response.status == 302 else None
        except OSError:
            return None

    def every_edge_serves(self, slug: str, url: str) -> bool:
        """Whether PROBES fresh connections to each edge all get `url`. The
        edges listen with reuseport, so the connections spread over their
        workers; every worker is certain to serve it only SETTLE seconds
        after one did (see settle)."""
        served = [self.location(n, slug) for n in range(self.topology.edges) for _ in range(PROBES)]
        for i, location in enumerate(served):
            if location is not None:  # a redirect served: its click counts too
                key = (i // PROBES, slug)
                self.probes[key] = self.probes.get(key, 0) + 1
        return all(location == url for location in served)

    def settle(self, slug: str, url: str) -> None:
        """Waits until every worker of every edge serves `url` for `slug`. A
        worker that looked the slug up before the change reached its replica
        keeps its old answer until its next read of the change feed, at most
        EDGE_LINK_CHANGES_INTERVAL later (docs/contract.md, "Link changes"):
        so once some worker of an edge serves it, all do SETTLE later."""
        wait_until(lambda: self.every_edge_serves(slug, url), timeout=60, what=f"every edge to serve /{slug}")
        time.sleep(SETTLE)

    def stored(self, slug: str) -> tuple[int, int]:
        """Clicks stored for the slug's link, and how many click ids occur twice."""
        import psycopg

        with psycopg.connect(self.topology.database_url(self.topology.pg_port), connect_timeout=5) as conn:
            count, distinct = conn.execute(
                "SELECT count(*), count(DISTINCT c.click_id) FROM clicks c JOIN links_link l ON l.id = c.link_id "
                "WHERE l.slug = %s",
                [slug],
            ).fetchone()
        return count, count - distinct

    def create(self, slug: str, **fields) -> None:
        status, body = self.api(
            "/api/v1/links", method="POST", body={"url": f"https://example.com/{slug}", "slug": slug, **fields}
        )
        if status != 201:
            raise RuntimeError(f"creating /{slug}: HTTP {status} {body}")

    def run(self, *, warmup: float = 3.0, away: float = 120.0, drain_timeout: float = 180.0) -> Result:
        top = self.topology
        slug, changed, limited = "multinode", "multinode-changed", "multinode-limited"
        for name in (slug, changed):
            self.create(name)
        self.create(limited, max_visits=LIMIT)
        self.create(LOCKED, password=PASSWORD)
        self.settle(slug, f"https://example.com/{slug}")
        self.settle(limited, f"https://example.com/{limited}")
        visitors = [Visitors(port, slug, threads=2, rate=self.rate).start() for port in top.edge_ports]
        limited_visitors = [Visitors(port, limited, threads=1, rate=self.rate / 4).start() for port in top.edge_ports]
        try:
            time.sleep(warmup)
            self.fail_over(changed, limited, away)
            self.kill_importer_host(1)
            time.sleep(warmup)
            self.result.restarted_at = time.monotonic() - self.killed_at
            self.restart_edge(top.edges - 1)
            time.sleep(warmup)
        finally:
            for v in visitors + limited_visitors:
                v.stop()
        for n, (v, lv) in enumerate(zip(visitors, limited_visitors, strict=True)):
            edge = f"edge{n + 1}"
            self.result.served[edge] = v.served[slug] + self.probes.get((n, slug), 0)
            self.result.limited_served[edge] = lv.served[limited]
            times = failure_times(v.failures, self.killed_at)
            self.result.failure_times[edge] = times
            self.result.limited_failures[edge] = failure_times(lv.failures, self.killed_at)
            self.result.notes += [
                f"{edge}: {what} ×{len(at)}, {min(at):+.2f} to {max(at):+.2f} s from the kill"
                for what, at in sorted(times.items())
            ]
            self.result.notes += [
                f"{edge}, visit-limited link: {what} ×{len(at)}, {min(at):+.2f} to {max(at):+.2f} s from the kill"
                for what, at in sorted(self.result.limited_failures[edge].items())
            ]
            if self.result.limited_failures[edge]:
                self.result.notes += self.edge_errors(edge, limited)
        self.log(f"visitors stopped: {self.result.total_served} redirects served; waiting for the importers")
        with suppress(TimeoutError):
            wait_until(
                lambda: self.stored(slug)[0] >= self.result.total_served,
                timeout=drain_timeout,
                what="every redirect stored",
                interval=0.5,
            )
        time.sleep(2.0)  # a duplicate would arrive after the count is reached
        self.result.stored, self.result.duplicates = self.stored(slug)
        self.result.reports_on_replica = self.report_reads_replica(slug)
        self.result.own_change_listed, self.result.replica_listed_after_pin = self.own_change_listed(slug)
        return self.result

    def listed_title(self, slug: str) -> str | None:
        status, body = self.api(f"/api/v1/links?search={slug}")
        return next((link["title"] for link in body.get("results", []) if link["slug"] == slug), None)

    def own_change_listed(self, slug: str) -> tuple[bool, bool]:
        """With the PostgreSQL replica's replay paused, so that it lacks any
        new write: whether the API's links list shows the title its person
        has just set (their lists read the primary for a moment), and whether
        it shows the replica's older title once that moment is over (the
        list does read the replica)."""
        import psycopg

        top = self.topology
        title = f"changed at {time.time():.3f}"
        with psycopg.connect(
            host=str(top.root / "pg-replica"), port=top.pg_replica_port, user="postgres", autocommit=True
        ) as replica:
            replica.execute("SELECT pg_wal_replay_pause()")
            try:
                status, body = self.api(f"/api/v1/links/{slug}", method="PATCH", body={"title": title})
                if status != 200:
                    raise RuntimeError(f"changing /{slug}'s title: HTTP {status} {body}")
                at_once = self.listed_title(slug) == title
                time.sleep(PIN_SECONDS + 0.5)
                later = self.listed_title(slug) not in (title, None)
            finally:
                replica.execute("SELECT pg_wal_replay_resume()")
        return at_once, later

    def report_reads_replica(self, slug: str) -> bool:
        """Whether the link's stats, asked through the API, ran on the
        replica: a dashboard connection there whose last statement read the
        click rollups."""
        import psycopg

        status, _ = self.api(f"/api/v1/links/{slug}/stats")
        url = self.topology.database_url(self.topology.pg_replica_port)
        with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
            (readers,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = 'slingshot' AND pid <> pg_backend_pid()"
                " AND query LIKE %s",
                ["%click_%"],
            ).fetchone()
        return status == 200 and readers > 0

    def redis(self, port: int):
        import redis

        return redis.Redis(port=port, password=self.topology.redis_password, socket_timeout=2)

    def fail_over(self, changed: str, limited: str, away: float) -> None:
        """Kills the primary and keeps it away for `away` seconds under
        traffic. While Sentinel promotes a replica, changes a link and makes
        a new one; then holds the new primary's replica still for a moment
        while a link changes, so that the publisher's WAIT fails and its
        delivery is retried."""
        top = self.topology
        old = top.sentinel_primary()
        victim = top.redis_process_on(old)
        limited_key = self.visits_key(old, limited)
        killed_at = self.killed_at = time.monotonic()
        victim.stop(signal.SIGKILL)
        self.log(f"killed the Redis primary ({victim.name}, port {old})")
        through: dict[int, float] = {}
        passers = [
            threading.Thread(target=lambda n=n: through.__setitem__(n, self.pass_through(n)), daemon=True)
            for n in range(top.edges)
        ]
        for passer in passers:
            passer.start()
        new_url = f"https://example.com/{changed}/after-failover"
        status, body = self.api(f"/api/v1/links/{changed}", method="PATCH", body={"url": new_url})
        if status != 200:
            raise RuntimeError(f"changing /{changed} during the failover: HTTP {status} {body}")
        changed_at = time.monotonic()
        fresh = "multinode-new"
        self.create(fresh)
        newcomers = [Visitors(port, fresh, threads=1, rate=20).start() for port in top.edge_ports]
        try:
            new = wait_until(
                lambda: (port := top.sentinel_primary()) not in (None, old) and top.primary_writable(port) and port,
                timeout=60,
                what="Sentinel to promote a replica",
                interval=0.05,
            )
            promoted_at = time.monotonic()
            self.result.without_primary = promoted_at - killed_at
            self.log(f"new primary: port {new}, {self.result.without_primary:.2f}s after the kill")
            counted_at_promotion = self.counter(new, limited_key)
            wait_until(
                lambda: self.every_edge_serves(changed, new_url), timeout=60, what="every edge to serve the change"
            )
            self.result.change_seen_after = time.monotonic() - changed_at
            self.result.change_seen_after_promotion = time.monotonic() - promoted_at
            self.log(
                f"every edge serves the changed link {self.result.change_seen_after:.2f}s after the change, "
                f"{self.result.change_seen_after_promotion:.2f}s after the new primary took writes"
            )
            wait_until(
                lambda: all(v.served[fresh] for v in newcomers), timeout=60, what="every edge to serve the new link"
            )
            self.result.new_link_served_after_promotion = time.monotonic() - promoted_at
            for n, passer in enumerate(passers):
                passer.join(timeout=60)
                if n in through:
                    self.result.passes_after_promotion[f"edge{n + 1}"] = through[n] - promoted_at
        finally:
            for v in newcomers:
                v.stop()
        for n, v in enumerate(newcomers):
            answers = self.result.new_link_answers[f"edge{n + 1}"] = failure_times(v.failures, killed_at)
            self.result.notes += [
                f"edge{n + 1}, the link made with no primary: {what} ×{len(at)}, {min(at):+.2f} to {max(at):+.2f} s "
                f"from the kill (promotion at +{self.result.without_primary:.2f})"
                for what, at in sorted(answers.items())
            ]
        self.hold_replica_during_a_change(new)
        left = killed_at + away - time.monotonic()
        self.log(f"the old primary stays away {max(left, 0):.0f}s more, under traffic")
        time.sleep(max(left, 0))
        self.result.away = time.monotonic() - killed_at
        self.result.limited_counted_on_new_primary = self.counter(new, limited_key) - counted_at_promotion
        # The old primary comes back as a replica of the new one.
        top.start_redis(victim.name, old)
        self.result.notes.append(f"the old primary (port {old}) came back as a replica of port {new}")

    def pass_through(self, n: int) -> float:
        """When (time.monotonic()) a visitor trying every 0.1 s got through the locked link on edge n."""

        def tried() -> bool:
            try:
                outcome = self.through_password(n)
            except OSError as error:
                outcome = error.__class__.__name__
            if outcome != "with the pass: HTTP 302":
                self.result.passes_refused[f"edge{n + 1} {outcome}"] += 1
            return outcome == "with the pass: HTTP 302"

        wait_until(tried, timeout=60, what=f"a visitor through the locked link on edge{n + 1}", interval=0.1)
        return time.monotonic()

    def through_password(self, n: int) -> str:
        """A visitor on edge n: the locked link's page, the password sent
        from it (the edge keeps the pass on the primary), then the link
        with the pass (taken from the primary). Returns the last status."""
        import http.client
        import re
        from urllib.parse import urlencode

        def visit(headers: dict, form: dict | None = None) -> http.client.HTTPResponse:
            conn = http.client.HTTPConnection("127.0.0.1", self.topology.edge_ports[n], timeout=10)
            body = urlencode(form) if form else None
            if form:
                headers = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
            conn.request("POST" if form else "GET", f"/{LOCKED}", body=body, headers=headers)
            response = conn.getresponse()
            response.body = response.read()
            conn.close()
            return response

        page = visit({"Referer": "https://example.org/"})
        kept = re.findall(rb'name="ref" value="([^"]*)"', page.body)
        if page.status != 200 or not kept:
            return f"the page: HTTP {page.status}"
        answer = visit({}, {"ref": kept[0].decode().replace("&amp;", "&"), "password": PASSWORD})
        cookie = (answer.getheader("Set-Cookie") or "").split(";")[0]
        if answer.status != 200 or not cookie:
            return f"the password: HTTP {answer.status}"
        return f"with the pass: HTTP {visit({'Cookie': cookie}).status}"

    def visits_key(self, port: int, slug: str) -> str:
        """The visit counter's key of the link of `slug`, from its published value."""
        raw = self.redis(port).get(f"slingshot:link:{slug}")
        return f"slingshot:visits:{json.loads(raw)['id']}"

    def counter(self, port: int, key: str) -> int:
        return int(self.redis(port).get(key) or 0)

    def publisher_wait_refusals(self) -> int:
        log = self.topology.processes["publisher"].log_path.read_text(errors="replace")
        return log.count("NotReplicated")

    def hold_replica_during_a_change(self, primary: int) -> None:
        """Stops the new primary's replicas (SIGSTOP) while a link changes:
        WAIT finds none, the publisher keeps the change and sends it again,
        and it is served once they go on (SIGCONT)."""
        top = self.topology
        replicas = [self.topology.processes[name] for name, port in top.redis_ports.items() if port != primary]
        replicas = [p for p in replicas if p.alive()]
        refused = self.publisher_wait_refusals()
        url = f"https://example.com/multinode-changed/held-{time.monotonic():.0f}"
        for process in replicas:
            process.send(signal.SIGSTOP)
        try:
            status, body = self.api("/api/v1/links/multinode-changed", method="PATCH", body={"url": url})
            if status != 200:
                raise RuntimeError(f"changing a link with the replicas held: HTTP {status} {body}")
            with suppress(TimeoutError):
                wait_until(lambda: self.publisher_wait_refusals() > refused, timeout=5, what="a refused WAIT")
        finally:
            for process in replicas:
                process.send(signal.SIGCONT)
        self.result.wait_retries = self.publisher_wait_refusals() - refused
        wait_until(lambda: self.every_edge_serves("multinode-changed", url), timeout=30, what="the retried change")
        self.log(f"replicas held still: the publisher's WAIT refused {self.result.wait_retries}×, then delivered")

    def importer_pending(self, host: int) -> int:
        """Entries the importers of `host` have read from their click stores and not acknowledged."""
        import redis

        from slingshot.contract import CLICKS_GROUP, CLICKS_STREAM

        pending = 0
        for port in self.topology.store_ports.values():
            with suppress(redis.ConnectionError):
                for consumer in self.redis(port).xpending(CLICKS_STREAM, CLICKS_GROUP)["consumers"]:
                    if consumer["name"] in (f"host{host}", f"host{host}".encode()):
                        pending += consumer["pending"]
        return pending

    def kill_importer_host(self, host: int) -> None:
        """SIGKILL to the host's importers while one of them holds a batch it
        has read and not stored: a lock on the clicks table holds every
        importer's insert, and what a dead consumer read stays pending, so
        the count after the kill says whether a batch was open."""
        import psycopg

        names = self.topology.importer_names(host)
        with psycopg.connect(self.topology.database_url(self.topology.pg_port), connect_timeout=5) as conn:
            conn.execute("LOCK TABLE clicks IN SHARE MODE")  # inserts wait; reads go on
            with suppress(TimeoutError):
                wait_until(lambda: self.importer_pending(host) > 0, timeout=30, what="an open batch")
            for name in names:
                self.topology.processes[name].stop(signal.SIGKILL)
            self.result.importer_pending_at_kill = self.importer_pending(host)
        self.log(
            f"killed importer host {host} with {self.result.importer_pending_at_kill} entries read and not stored "
            "(they go to host 2 after 3s idle)"
        )

    def edge_errors(self, edge: str, slug: str) -> list[str]:
        """Why the edge failed visits to `slug`, as its log says, each reason with its count."""
        log = self.topology.processes[edge].log_path.read_text(errors="replace")
        reasons = Counter(
            line.split(f"slug {slug}: ", 1)[1].split(", client:")[0]
            for line in log.splitlines()
            if f"slug {slug}: " in line
        )
        return [f"{edge} logged for /{slug}: {reason} ×{n}" for reason, n in reasons.most_common()]

    def restart_edge(self, n: int) -> None:
        process = self.topology.processes[f"edge{n + 1}"]
        process.stop(signal.SIGQUIT)  # graceful: workers send their clicks, then exit
        self.topology.start_edge(n)
        self.log(f"restarted edge{n + 1}")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="make multinode", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="visits per second to each edge")
    parser.add_argument("--away", type=float, default=180.0, help="seconds the killed primary stays away")
    parser.add_argument("--keep", action="store_true", help="keep the folder with every piece's log")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="slingshot-multinode-"))
    root.chmod(0o755)
    topology = Topology(root)
    try:
        topology.start()
        result = Scenario(topology, rate=args.rate).run(away=args.away)
    finally:
        topology.stop()
        if args.keep:
            print(f"logs: {root / 'logs'}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    for line in result.lines():
        print(line)
    return 0 if result.reconciled and not result.taken_for_unknown and result.held_up else 1

"""kill -9 for each process of a running `make run` stack, one at a time,
with visitors clicking a short link throughout: how long each took to come
back, whether the edge kept redirecting, and whether every redirect it
served became one click stored in PostgreSQL.

Used by tests/test_stack.py and loadtest/stack_faults.py (`make stack-faults`).
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field

import devstack
from devstack.supervised import SupervisedStack, wait_until

# In the order they are killed. The edge's own restart is the one fault
# during which visitors may see errors.
FAULTS = ("importer", "publisher", "dashboard", "edge", "redis", "postgres")
MAIN_SLUG = "faults"


def request(
    port: int, path: str, *, method: str = "GET", body: dict | None = None, token: str | None = None
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class Visitors:
    """Threads that GET short links on the edge over keep-alive connections,
    counting the 302s per slug and keeping every other outcome with its time."""

    def __init__(
        self, port: int, slug: str, *, threads: int = 3, rate: float = 300.0, headers: dict | None = None
    ) -> None:
        self.port, self.slug = port, slug
        self.headers = headers or {}
        self.interval = threads / rate
        self.served: Counter = Counter()
        self.failures: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._visit, daemon=True) for _ in range(threads)]

    def start(self) -> "Visitors":
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def count(self, slug: str, status: int) -> None:
        if status == 302:
            with self.lock:
                self.served[slug] += 1

    def _visit(self) -> None:
        conn = None
        while not self.stopping.wait(self.interval):
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", f"/{self.slug}", headers=self.headers)
                response = conn.getresponse()
                response.read()
                self.count(self.slug, response.status)
                if response.status != 302:
                    with self.lock:
                        self.failures.append((time.monotonic(), f"HTTP {response.status}"))
                if response.will_close:
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as exc:
                with self.lock:
                    self.failures.append((time.monotonic(), f"{type(exc).__name__}: {exc}"))
                if conn is not None:
                    conn.close()
                conn = None
        if conn is not None:
            conn.close()

    def failures_between(self, start: float, end: float) -> list[str]:
        with self.lock:
            return [what for at, what in self.failures if start <= at <= end]


@dataclass
class Recovery:
    program: str
    killed_pid: int
    back_after: float  # seconds from the kill until it did its job again
    running_after: float  # ... until supervisord said RUNNING again
    edge_errors: int  # visitors' failed requests meanwhile
    dashboard_errors: int  # API requests right after, answered other than 200
    how: str  # what "did its job again" was


@dataclass
class Report:
    recoveries: list[Recovery] = field(default_factory=list)
    served: dict[str, int] = field(default_factory=dict)
    stored: dict[str, int] = field(default_factory=dict)
    failures_outside_edge: list[str] = field(default_factory=list)

    def table(self) -> str:
        lines = [
            f"{'killed (-9)':<12} {'back after':>10} {'RUNNING after':>13} {'edge errors':>11} "
            f"{'API errors after':>16}  back means"
        ]
        for r in self.recoveries:
            lines.append(
                f"{r.program:<12} {r.back_after:>9.2f}s {r.running_after:>12.2f}s {r.edge_errors:>11} "
                f"{r.dashboard_errors:>16}  {r.how}"
            )
        lines.append("")
        for slug in sorted(self.served):
            lines.append(f"/{slug}: redirects served {self.served[slug]}, clicks stored {self.stored.get(slug, 0)}")
        return "\n".join(lines)


class FaultRun:
    """Drives one run against `stack`, a SupervisedStack that is RUNNING."""

    def __init__(self, stack: SupervisedStack, *, admin: str, rate: float = 300.0, log=print) -> None:
        self.stack = stack
        self.log = log
        self.env = {
            **stack.env,
            **stack.secrets,
            "SLINGSHOT_ENV_FILE": str(stack.run / "env"),
            "DJANGO_SETTINGS_MODULE": "slingshot.settings",
        }
        self.token = subprocess.run(
            [
                sys.executable,
                str(devstack.REPO / "dashboard" / "manage.py"),
                "create_api_token",
                admin,
                "--scope",
                "write",
                "--name",
                "faults",
            ],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout.strip()
        self.edge_port = stack.ports["EDGE_PORT"]
        self.dashboard_port = stack.ports["DASHBOARD_PORT"]
        self.rate = rate
        self.visitors: Visitors | None = None
        self.report = Report()

    # --- links and clicks ----------------------------------------------------------

    def create_link(self, slug: str) -> None:
        status, body = request(
            self.dashboard_port,
            "/api/v1/links",
            method="POST",
            token=self.token,
            body={"url": f"https://example.com/{slug}", "slug": slug},
        )
        if status != 201:
            raise AssertionError(f"creating /{slug}: HTTP {status} {body[:300]!r}")

    def redirects(self, slug: str) -> bool:
        """One visit; counted as served when it redirects."""
        try:
            status, _ = request(self.edge_port, f"/{slug}")
        except OSError:
            return False
        self.visitors.count(slug, status)
        return status == 302

    def stored(self) -> dict[str, int]:
        import psycopg

        with psycopg.connect(self.env["DATABASE_URL"], connect_timeout=5) as conn:
            rows = conn.execute(
                "SELECT l.slug, count(c.*) FROM links_link l LEFT JOIN clicks c ON c.link_id = l.id GROUP BY l.slug"
            ).fetchall()
        return dict(rows)

    def stored_or_empty(self) -> dict[str, int]:
        try:
            return self.stored()
        except Exception:  # PostgreSQL is away: not yet
            return {}

    # --- what "back" means for each program ------------------------------------------

    def back(self, program: str, killed_pid: int) -> str:
        """Waits until `program` does its job again; says how that was seen."""
        if program == "importer":
            slug = "probe-importer"
            before = self.stored()[slug]
            wait_until(lambda: self.redirects(slug), timeout=30, what="a visit to the importer's probe link")
            wait_until(
                lambda: self.stored_or_empty().get(slug, 0) > before,
                timeout=120,
                what="the importer storing a click made after its restart",
                interval=0.1,
            )
            return "a click made after the kill is in PostgreSQL"
        if program == "publisher":
            self.create_link("probe-publisher")
            wait_until(
                lambda: self.redirects("probe-publisher"),
                timeout=120,
                interval=0.1,
                what="a link created after the publisher's restart to redirect",
            )
            return "a link created after the kill redirects at the edge"
        if program == "dashboard":
            wait_until(
                lambda: self.stack.master_pid("dashboard") not in (None, killed_pid) and self.api_answers(),
                timeout=120,
                what="a new gunicorn master to answer the API",
            )
            return "a new gunicorn master answers the API"
        if program == "edge":
            wait_until(
                lambda: self.stack.master_pid("edge") not in (None, killed_pid) and self.redirects(MAIN_SLUG),
                timeout=120,
                what="a new nginx master to redirect",
            )
            return "a new nginx master redirects"
        if program == "redis":
            wait_until(self.redis_answers, timeout=120, what="Redis to answer")
            return "Redis answers PING"
        if program == "postgres":
            wait_until(lambda: self.stored_or_empty() != {}, timeout=120, what="PostgreSQL to answer")
            return "PostgreSQL answers a query"
        raise ValueError(program)

    def api_answers(self) -> bool:
        try:
            return request(self.dashboard_port, "/api/v1/links", token=self.token)[0] == 200
        except OSError:
            return False

    def redis_answers(self) -> bool:
        import redis

        try:
            return redis.Redis(
                port=int(self.env["REDIS_PORT"]),
                password=self.env["REDIS_PASSWORD"],
                socket_timeout=1,
                socket_connect_timeout=1,
            ).ping()
        except redis.RedisError:
            return False

    def victim(self, program: str) -> int:
        if program in ("edge", "dashboard"):
            return self.stack.master_pid(program)  # the master, not devstack's keep_group
        return self.stack.info(program)["pid"]

    # --- the run ------------------------------------------------------------------------

    def kill_and_wait(self, program: str) -> Recovery:
        old_supervised = self.stack.info(program)["pid"]
        pid = self.victim(program)
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        how = self.back(program, pid)
        back_after = time.monotonic() - killed_at
        # A new supervised process (for the edge and the dashboard, a new keep_group).
        wait_until(
            lambda: (info := self.stack.info(program))["statename"] == "RUNNING" and info["pid"] != old_supervised,
            timeout=120,
            what=f"{program} RUNNING again",
        )
        running_after = time.monotonic() - killed_at
        # Visitors keep clicking for a while on what came back.
        settle_until = time.monotonic() + 2.0
        wait_until(lambda: time.monotonic() > settle_until, timeout=5, what="settling")
        errors = self.visitors.failures_between(killed_at, time.monotonic())
        # Once everything is back, every dashboard worker answers, the first time.
        api_errors = sum(not self.api_answers() for _ in range(6))
        recovery = Recovery(program, pid, back_after, running_after, len(errors), api_errors, how)
        if program != "edge":
            self.report.failures_outside_edge += [f"{program}: {what}" for what in errors]
        self.log(
            f"killed {program} (pid {pid}): back after {back_after:.2f}s ({how}), RUNNING after "
            f"{running_after:.2f}s, {len(errors)} failed visits meanwhile, {api_errors} failed API requests after"
        )
        return recovery

    def run(self, faults=FAULTS, *, drain_timeout: float = 180.0) -> Report:
        self.create_link(MAIN_SLUG)
        self.create_link("probe-importer")
        self.visitors = Visitors(self.edge_port, MAIN_SLUG, rate=self.rate)
        wait_until(lambda: self.redirects(MAIN_SLUG), timeout=60, what=f"/{MAIN_SLUG} to redirect")
        wait_until(lambda: self.redirects("probe-importer"), timeout=60, what="/probe-importer to redirect")
        self.visitors.start()
        started = time.monotonic()
        wait_until(lambda: time.monotonic() - started > 2.0, timeout=5, what="warming up")
        try:
            for program in faults:
                self.report.recoveries.append(self.kill_and_wait(program))
        finally:
            self.visitors.stop()
        self.report.served = dict(self.visitors.served)
        wanted = self.report.served
        self.log(f"visitors stopped; waiting for the importer to store {sum(wanted.values())} clicks")

        def drained():
            stored = self.stored_or_empty()
            return stored if all(stored.get(slug, 0) >= n for slug, n in wanted.items()) else None

        with suppress(TimeoutError):  # the report shows the difference
            wait_until(drained, timeout=drain_timeout, what="every served redirect stored", interval=0.5)
        self.wait_import_lag_zero()
        self.report.stored = {slug: n for slug, n in self.stored().items() if slug in wanted}
        return self.report

    def wait_import_lag_zero(self) -> None:
        """Until the clicks stream has nothing left to import (`import_clicks
        --lag`), so that a count taken now is final: a duplicate would show."""

        def caught_up():
            result = subprocess.run(
                [sys.executable, str(devstack.REPO / "dashboard" / "manage.py"), "import_clicks", "--lag"],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            if result.returncode != 0:
                return False
            lag = json.loads(result.stdout)
            return lag["backlog"] == 0 and lag["pending"] == 0

        wait_until(caught_up, timeout=120, what="the importer to catch up", interval=0.2)

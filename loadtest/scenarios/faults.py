"""kill -9 for each process of a running `make run` stack, one at a time,
with visitors clicking a short link of the fault's own throughout: how long
each took to come back, whether the edge kept redirecting, whether every
redirect it served became one click stored in PostgreSQL, and whether the
accounting (served against stored, per hour) came out even.

Used by tests/test_stack.py and loadtest/stack_faults.py (`make stack-faults`).
"""

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field

import devstack
from devstack.processes import group_members
from devstack.supervised import SupervisedStack, wait_until
from loadtest.scenarios.visitors import Visitors, accounting, request, settled_accounting

# In the order they are killed: "edge-worker" is one nginx worker of the
# edge, "edge" its nginx master, "front" the dashboard's front's nginx
# master. The edge's own faults are the ones during which visitors may see
# errors.
FAULTS = ("importer", "publisher", "dashboard", "front", "edge-worker", "edge", "redis", "postgres")
EDGE_FAULTS = ("edge-worker", "edge")


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
class FaultResult:
    """One fault under traffic to a link of its own."""

    recovery: Recovery
    slug: str
    served: int  # redirects the visitors got
    failed: int  # visits that failed, from the first to the last
    stored: int  # clicks of the link in PostgreSQL, once the importer caught up
    accounting: dict[str, int | None]  # hour -> served minus stored, every hour of the run so far

    @property
    def every_redirect_stored(self) -> bool:
        """Exactly, but for the fault that kills a worker mid-request: a click
        written and its answer lost with the worker is a failed visit that
        was stored."""
        if self.recovery.program == "edge-worker":
            return self.served <= self.stored <= self.served + self.failed
        return self.served == self.stored


@dataclass
class Report:
    results: list[FaultResult] = field(default_factory=list)

    @property
    def recoveries(self) -> list[Recovery]:
        return [result.recovery for result in self.results]

    @property
    def failures_outside_edge(self) -> list[str]:
        return [
            f"{r.recovery.program}: {r.recovery.edge_errors} failed visits"
            for r in self.results
            if r.recovery.edge_errors and r.recovery.program not in EDGE_FAULTS
        ]

    def table(self) -> str:
        lines = [
            f"{'killed (-9)':<12} {'back after':>10} {'RUNNING after':>13} {'edge errors':>11} "
            f"{'API errors after':>16} {'served':>7} {'stored':>7} {'difference':>10}  back means"
        ]
        for result in self.results:
            r = result.recovery
            difference = sum(d or 0 for d in result.accounting.values())
            lines.append(
                f"{r.program:<12} {r.back_after:>9.2f}s {r.running_after:>12.2f}s {r.edge_errors:>11} "
                f"{r.dashboard_errors:>16} {result.served:>7} {result.stored:>7} {difference:>10}  {r.how}"
            )
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

    def counted(self, slug: str) -> int:
        """The clicks stored for the slug's link as its all-time total says
        (link_click_totals, which the importer adds to in the transaction
        that stores them): one row read, where stored() counts every row of
        `clicks`, too dear to poll while a benchmark measures the stack's CPU."""
        import psycopg

        with psycopg.connect(self.env["DATABASE_URL"], connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(t.clicks), 0)::bigint FROM links_link l JOIN link_click_totals t ON t.link_id = l.id "
                "WHERE l.slug = %s",
                [slug],
            ).fetchone()
        return row[0]

    def stored_or_empty(self) -> dict[str, int]:
        try:
            return self.stored()
        except Exception:  # PostgreSQL is away: not yet
            return {}

    # --- what "back" means for each program ------------------------------------------

    def back(self, program: str, killed_pid: int, slug: str) -> str:
        """Waits until `program` does its job again; says how that was seen."""
        if program == "importer":
            probe = "probe-importer"
            before = self.stored().get(probe, 0)
            wait_until(lambda: self.redirects(probe), timeout=30, what="a visit to the importer's probe link")
            wait_until(
                lambda: self.stored_or_empty().get(probe, 0) > before,
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
        if program in ("dashboard", "front"):
            master = "gunicorn" if program == "dashboard" else "front nginx"
            wait_until(
                lambda: self.stack.master_pid(program) not in (None, killed_pid) and self.api_answers(),
                timeout=120,
                what=f"a new {master} master to answer the API",
            )
            return f"a new {master} master answers the API"
        if program == "edge-worker":
            wait_until(
                lambda: killed_pid not in self.edge_workers() and len(self.edge_workers()) == self.workers,
                timeout=60,
                what="nginx to start a worker in the killed one's place",
            )
            return "nginx started another worker"
        if program == "edge":
            wait_until(
                lambda: self.stack.master_pid("edge") not in (None, killed_pid) and self.redirects(slug),
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

    def edge_workers(self) -> list[int]:
        master = self.stack.master_pid("edge")
        return [pid for pid in group_members(master) if pid != master] if master else []

    def victim(self, program: str) -> int:
        if program in ("edge", "dashboard", "front"):
            return self.stack.master_pid(program)  # the master, not devstack's keep_group
        if program == "edge-worker":
            workers = self.edge_workers()
            self.workers = len(workers)
            return workers[0]
        return self.stack.info(program)["pid"]

    def supervised(self, program: str) -> str:
        return "edge" if program == "edge-worker" else program

    # --- the run ------------------------------------------------------------------------

    def kill_and_wait(self, program: str, visitors: Visitors, slug: str) -> Recovery:
        supervised = self.supervised(program)
        old_supervised = self.stack.info(supervised)["pid"]
        pid = self.victim(program)
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        how = self.back(program, pid, slug)
        back_after = time.monotonic() - killed_at
        if program == "edge-worker":  # nginx's own business: supervisord sees nothing
            running_after = back_after
        else:  # a new supervised process (for the edge, the dashboard and the front, a new keep_group)
            wait_until(
                lambda: (
                    (info := self.stack.info(supervised))["statename"] == "RUNNING" and info["pid"] != old_supervised
                ),
                timeout=120,
                what=f"{program} RUNNING again",
            )
            running_after = time.monotonic() - killed_at
        # Visitors keep clicking for a while on what came back.
        settle_until = time.monotonic() + 2.0
        wait_until(lambda: time.monotonic() > settle_until, timeout=5, what="settling")
        errors = visitors.failures_between(killed_at, time.monotonic())
        # Once everything is back, every dashboard worker answers, the first time.
        api_errors = sum(not self.api_answers() for _ in range(6))
        recovery = Recovery(program, pid, back_after, running_after, len(errors), api_errors, how)
        self.log(
            f"killed {program} (pid {pid}): back after {back_after:.2f}s ({how}), RUNNING after "
            f"{running_after:.2f}s, {len(errors)} failed visits meanwhile, {api_errors} failed API requests after"
        )
        return recovery

    def one(self, program: str, *, drain_timeout: float = 180.0) -> FaultResult:
        """`program` killed under traffic to a link of its own; then, once
        the importer has caught up, the link's clicks stored and the
        accounting of every hour so far."""
        slug = f"faults-{program}"
        visitors = Visitors(self.edge_port, slug, rate=self.rate)
        self.visitors = visitors
        self.create_link(slug)
        if program == "importer":
            self.create_link("probe-importer")
            wait_until(lambda: self.redirects("probe-importer"), timeout=60, what="/probe-importer to redirect")
        wait_until(lambda: self.redirects(slug), timeout=60, what=f"/{slug} to redirect")
        visitors.start()
        started = time.monotonic()
        wait_until(lambda: time.monotonic() - started > 2.0, timeout=5, what="warming up")
        try:
            recovery = self.kill_and_wait(program, visitors, slug)
        finally:
            visitors.stop()
        served = visitors.served[slug]
        self.log(f"visitors stopped; waiting for the importer to store {served} clicks of /{slug}")
        with suppress(TimeoutError):  # the result shows the difference
            wait_until(
                lambda: self.stored_or_empty().get(slug, 0) >= served,
                timeout=drain_timeout,
                what="every served redirect stored",
                interval=0.5,
            )
        self.wait_import_lag_zero()
        result = FaultResult(
            recovery=recovery,
            slug=slug,
            served=served,
            failed=len(visitors.failures),
            stored=self.stored().get(slug, 0),
            accounting=self.settled_accounting(),
        )
        self.log(
            f"/{slug}: {result.served} redirects served, {result.stored} clicks stored; accounting {result.accounting}"
        )
        return result

    def run(self, faults=FAULTS) -> Report:
        report = Report()
        for program in faults:
            report.results.append(self.one(program))
        return report

    def accounting(self) -> dict[str, int | None]:
        return accounting(self.dashboard_port, self.token)

    def settled_accounting(self, timeout: float = 30.0) -> dict[str, int | None]:
        return settled_accounting(self.dashboard_port, self.token, timeout=timeout)

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

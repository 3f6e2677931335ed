"""The multinode scenario's run against a started Topology
(loadtest/scenarios/multinode/__init__.py): what it does to the stack, in
order, and what it finds (result.py). Its requests and reads are the
Client's (client.py)."""

import signal
import threading
import time
from contextlib import suppress

from devstack.supervised import wait_until
from loadtest.scenarios.multinode.client import LOCKED, PASSWORD, Client
from loadtest.scenarios.multinode.result import Result, failure_times
from loadtest.scenarios.multinode.topology import PIN_SECONDS, Topology
from loadtest.scenarios.visitors import Visitors

LIMIT = 10**9  # the limited link's max_visits: never reached, but each visit is counted on the primary


class Scenario(Client):
    """The run: the faults in order, under visitors, and what they cost (Result)."""

    def __init__(self, topology: Topology, *, rate: float = 200.0, log=print) -> None:
        super().__init__(topology)
        self.rate = rate
        self.log = log
        self.result = Result()
        self.killed_at = time.monotonic()  # when fail_over killed the primary

    def run(self, *, warmup: float = 3.0, away: float = 120.0, drain_timeout: float = 180.0) -> Result:
        """Sets up the links, sends visitors through the faults, then counts what was served and stored."""
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
        self.tally(visitors, limited_visitors, slug, limited)
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

    def tally(self, visitors: list[Visitors], limited_visitors: list[Visitors], slug: str, limited: str) -> None:
        """Records each edge's redirects served and failed visits, with notes on when they failed."""
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
        self.note_new_link_answers(newcomers)
        self.hold_replica_during_a_change(new)
        left = killed_at + away - time.monotonic()
        self.log(f"the old primary stays away {max(left, 0):.0f}s more, under traffic")
        time.sleep(max(left, 0))
        self.result.away = time.monotonic() - killed_at
        self.result.limited_counted_on_new_primary = self.counter(new, limited_key) - counted_at_promotion
        # The old primary comes back as a replica of the new one.
        top.start_redis(victim.name, old)
        self.result.notes.append(f"the old primary (port {old}) came back as a replica of port {new}")

    def note_new_link_answers(self, newcomers: list[Visitors]) -> None:
        """Records what each edge answered the link made with no primary before it served it."""
        for n, v in enumerate(newcomers):
            answers = self.result.new_link_answers[f"edge{n + 1}"] = failure_times(v.failures, self.killed_at)
            self.result.notes += [
                f"edge{n + 1}, the link made with no primary: {what} ×{len(at)}, {min(at):+.2f} to {max(at):+.2f} s "
                f"from the kill (promotion at +{self.result.without_primary:.2f})"
                for what, at in sorted(answers.items())
            ]

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
                wait_until(lambda: self.importer_pending(host) > 0, timeout=60, what="an open batch")
            if not self.importer_pending(host):
                self.result.notes += self.importer_states(host)
            for name in names:
                self.topology.processes[name].stop(signal.SIGKILL)
            self.result.importer_pending_at_kill = self.importer_pending(host)
        self.log(
            f"killed importer host {host} with {self.result.importer_pending_at_kill} entries read and not stored "
            "(they go to host 2 after 3s idle)"
        )

    def restart_edge(self, n: int) -> None:
        """Stops edge n gracefully under traffic and starts it again."""
        process = self.topology.processes[f"edge{n + 1}"]
        process.stop(signal.SIGQUIT)  # graceful: workers send their clicks, then exit
        self.topology.start_edge(n)
        self.log(f"restarted edge{n + 1}")

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

"""The multinode scenario's run against a started Topology
(loadtest/scenarios/multinode/__init__.py)."""

import json
import signal
import threading
import time
from collections import Counter
from contextlib import suppress

from devstack.supervised import wait_until
from loadtest.scenarios.multinode.result import Result, failure_times
from loadtest.scenarios.multinode.topology import PIN_SECONDS, Topology
from loadtest.scenarios.visitors import Visitors, request

PROBES = 4  # connections to each edge that must all serve a link (Scenario.every_edge_serves)
SETTLE = 0.5  # seconds: more than two EDGE_LINK_CHANGES_INTERVAL (0.2 s)
LIMIT = 10**9  # the limited link's max_visits: never reached, but each visit is counted on the primary
LOCKED = "multinode-locked"
PASSWORD = "multinode password"  # the locked link's: a visitor's pass through it is kept on the primary


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

    def importer_states(self, host: int) -> list[str]:
        """What each click store's consumers and the host's importers were
        doing, for a report: why no batch was open."""
        import redis

        from slingshot.contract import CLICKS_GROUP, CLICKS_STREAM

        states = []
        for store, port in self.topology.store_ports.items():
            try:
                consumers = self.redis(port).xinfo_consumers(CLICKS_STREAM, CLICKS_GROUP)
                length = self.redis(port).xlen(CLICKS_STREAM)
            except redis.RedisError as exc:
                states.append(f"{store}: {exc!r}")
                continue
            described = ", ".join(f"{c['name'].decode()} pending {c['pending']} idle {c['idle']} ms" for c in consumers)
            states.append(f"{store}: {length} entries; {described}")
        for name in self.topology.importer_names(host):
            process = self.topology.processes[name]
            tail = process.log_path.read_text(errors="replace").splitlines()[-3:]
            states.append(f"{name} ({'alive' if process.alive() else 'dead'}): " + " | ".join(tail))
        return states

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

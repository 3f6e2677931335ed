"""What the multinode scenario asks of a started Topology and reads from it
(loadtest/scenarios/multinode/__init__.py): the dashboard's API, the edges,
PostgreSQL, the Redis servers and the pieces' logs. The faults and their
order are the Scenario's (scenario.py)."""

import json
import time
from collections import Counter
from contextlib import suppress

from devstack.supervised import wait_until
from loadtest.scenarios.multinode.topology import Topology
from loadtest.scenarios.visitors import request

PROBES = 4  # connections to each edge that must all serve a link (Client.every_edge_serves)
SETTLE = 0.5  # seconds: more than two EDGE_LINK_CHANGES_INTERVAL (0.2 s)
LOCKED = "multinode-locked"
PASSWORD = "multinode password"  # the locked link's: a visitor's pass through it is kept on the primary


class Client:
    """The scenario's requests to the stack, with an API token of its own."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.token = topology.manage("create_api_token", "admin", "--scope", "write", "--name", "multinode").strip()
        self.probes: dict[tuple[int, str], int] = {}  # (edge, slug): redirects served to our own checks

    # --- the dashboard's API ---------------------------------------------------------

    def api(self, path: str, *, method: str = "GET", body: dict | None = None) -> tuple[int, dict]:
        status, raw = request(self.topology.dashboard_port, path, method=method, body=body, token=self.token)
        return status, json.loads(raw or b"{}")

    def create(self, slug: str, **fields) -> None:
        status, body = self.api(
            "/api/v1/links", method="POST", body={"url": f"https://example.com/{slug}", "slug": slug, **fields}
        )
        if status != 201:
            raise RuntimeError(f"creating /{slug}: HTTP {status} {body}")

    def listed_title(self, slug: str) -> str | None:
        status, body = self.api(f"/api/v1/links?search={slug}")
        return next((link["title"] for link in body.get("results", []) if link["slug"] == slug), None)

    # --- the edges -------------------------------------------------------------------

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

    # --- PostgreSQL and Redis --------------------------------------------------------

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

    def redis(self, port: int):
        import redis

        return redis.Redis(port=port, password=self.topology.redis_password, socket_timeout=2)

    def visits_key(self, port: int, slug: str) -> str:
        """The visit counter's key of the link of `slug`, from its published value."""
        raw = self.redis(port).get(f"slingshot:link:{slug}")
        return f"slingshot:visits:{json.loads(raw)['id']}"

    def counter(self, port: int, key: str) -> int:
        return int(self.redis(port).get(key) or 0)

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

    # --- the pieces' logs ------------------------------------------------------------

    def publisher_wait_refusals(self) -> int:
        log = self.topology.processes["publisher"].log_path.read_text(errors="replace")
        return log.count("NotReplicated")

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

    def edge_errors(self, edge: str, slug: str) -> list[str]:
        """Why the edge failed visits to `slug`, as its log says, each reason with its count."""
        log = self.topology.processes[edge].log_path.read_text(errors="replace")
        reasons = Counter(
            line.split(f"slug {slug}: ", 1)[1].split(", client:")[0]
            for line in log.splitlines()
            if f"slug {slug}: " in line
        )
        return [f"{edge} logged for /{slug}: {reason} ×{n}" for reason, n in reasons.most_common()]

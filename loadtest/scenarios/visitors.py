"""Visitors of a running stack: threads that click a short link at a steady
rate, one request of the dashboard's API, and the accounting (served
against stored, per hour) that the Accounting page reads.

Used by the fault scenarios (loadtest/scenarios/faults.py,
loadtest/scenarios/multinode/), the loadtest scripts and the tests.
"""

import http.client
import json
import threading
import time
from collections import Counter


def request(
    port: int,
    path: str,
    *,
    method: str = "GET",
    body: dict | None = None,
    token: str | None = None,
    timeout: float = 5.0,
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def accounting(dashboard_port: int, token: str) -> dict[str, int | None]:
    """Served minus stored of every hour of the last day with traffic,
    from the API the Accounting page shares its figures with (`token`: a
    staff member's or a superuser's)."""
    status, body = request(dashboard_port, "/api/v1/accounting?days=1", token=token)
    if status != 200:
        raise AssertionError(f"/api/v1/accounting: HTTP {status} {body[:300]!r}")
    return {
        hour["hour"]: hour["difference"]
        for hour in json.loads(body)["hours"]
        if hour["served_redirects"] + hour["served_orphans"] + hour["stored_clicks"] + hour["stored_orphans"]
    }


def settled_accounting(dashboard_port: int, token: str, *, timeout: float = 30.0) -> dict[str, int | None]:
    """The accounting once every difference is zero, or as it stands after
    `timeout` seconds (the edges send their counts a moment after the
    clicks)."""
    deadline = time.monotonic() + timeout
    while True:
        found = accounting(dashboard_port, token)
        if all(difference == 0 for difference in found.values()) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


class Visitors:
    """Threads that GET short links on the edge over keep-alive connections,
    counting the 302s per slug and keeping every other outcome with its time."""

    def __init__(
        self,
        port: int,
        slug: str,
        *,
        threads: int = 3,
        rate: float = 300.0,
        headers: dict | None = None,
        leave_failing: bool = False,
    ) -> None:
        self.port, self.slug = port, slug
        self.headers = headers or {}
        # Whether a thread leaves a connection that did not answer 302, for
        # another, which may reach another worker (nginx closes a kept-alive
        # connection after 1,000 requests, and the next may land on a worker
        # that cannot serve the link).
        self.leave_failing = leave_failing
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
                if response.will_close or (self.leave_failing and response.status != 302):
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

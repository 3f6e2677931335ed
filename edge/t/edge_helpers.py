"""What the edge tests share: publishing links the way docs/contract.md says,
reading the click stream and the edge's /metrics, and a private Redis."""

import contextlib
import http.client
import os
import re
import socket
import threading
import time
import uuid
import zlib

import orjson
import psutil
import redis
from click_stream import decode_clicks

from devstack.http_client import http_request
from devstack.processes import group_members
from devstack.throwaway import ThrowawayStack
from slingshot.contract import CLICKS_STREAM, LINK_CHANGES_MAXLEN, LINK_CHANGES_STREAM, link_key


def session_redis() -> redis.Redis:
    """The test run's Redis, which the `edge` fixtures use."""
    return redis.Redis(port=int(os.environ["REDIS_PORT"]), password=os.environ["REDIS_PASSWORD"])


def link_id(slug: str) -> int:
    """The id these tests give the link of a slug they publish."""
    return zlib.crc32(slug.encode()) + 1


def publish(
    client: redis.Redis, slug: str, url: str | None = "https://example.com/", *, host: str | None = None, **fields
) -> None:
    """A link value (or its deletion) and its change notification in one
    MULTI, as docs/contract.md has it, for the tests of the edge alone.
    Where the dashboard and the edge are tested together, links go through
    the services and the real publisher (test_contract.py, the
    `through_publisher` tests of test_cache.py, tests/test_publishing.py).
    `host`: on that domain rather than the default one."""
    pipe = client.pipeline(transaction=True)
    if url is None:
        pipe.delete(link_key(slug, host))
    else:
        value = {"id": link_id(slug), "url": url, "status": 302, "active": True, **fields}
        pipe.set(link_key(slug, host), orjson.dumps(value))
    change = {"slug": slug, "domain": host} if host else {"slug": slug}
    pipe.xadd(LINK_CHANGES_STREAM, change, maxlen=LINK_CHANGES_MAXLEN, approximate=True)
    pipe.execute()


def stream_clicks(client: redis.Redis, slug: str | None = None) -> list[dict]:
    found = []
    for _, fields in client.xrange(CLICKS_STREAM):
        found += [click for click in decode_clicks(fields) if slug is None or click["slug"] == slug]
    return found


def wait_for_clicks(client: redis.Redis, slug: str, count: int, timeout: float = 5.0) -> list[dict]:
    """Waits until `count` clicks on `slug` are in the stream, then a little
    longer, so that any extra click would show too."""
    deadline = time.monotonic() + timeout
    while len(stream_clicks(client, slug)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    return stream_clicks(client, slug)


def wait_until(condition, *, timeout: float = 5.0, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


EVICTIONS = "slingshot_edge_cache_evictions_total"


def following(edge, client: redis.Redis) -> float:
    """Waits until every worker of the edge follows the change stream: a
    notification published now is read (and evicted for) by all of them. A
    worker that has just started begins at the stream's end, and would miss
    a change published before it got there. Returns the evictions so far."""
    deadline = time.monotonic() + 10
    while True:
        before = metrics(edge).get(EVICTIONS, 0)
        publish(client, "following-" + uuid.uuid4().hex[:8], None)
        settle = time.monotonic() + 1
        while time.monotonic() < settle:
            now = metrics(edge).get(EVICTIONS, 0)
            if now - before >= edge.workers:
                return now
        assert time.monotonic() < deadline, "the edge's workers do not follow the change stream"


def wait_for_notifications(edge, count: int) -> None:
    """Waits until the edge's workers have read `count` change notifications
    in all since it started (each worker evicts a slug for each one it reads)."""
    wait_until(lambda: metrics(edge).get(EVICTIONS, 0) >= count, what=f"{count} change notifications read")


_SAMPLE = re.compile(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$")


def metrics(edge) -> dict[str, float]:
    """The edge's /metrics as {series: value}, once every worker has synced."""
    time.sleep(0.15)  # workers move their counts to the shared dict every 0.05 s in tests
    response = edge.request("/metrics")
    assert response.status == 200, response.body
    values = {}
    for line in response.body.decode().splitlines():
        if line and not line.startswith("#"):
            match = _SAMPLE.match(line)
            assert match, line
            values[match.group(1)] = float(match.group(2))
    return values


def delta(before: dict, after: dict, series: str) -> float:
    return after.get(series, 0) - before.get(series, 0)


def workers(edge) -> list[int]:
    """The edge's worker processes (its master leads their process group)."""
    return [pid for pid in group_members(edge.process.pid) if pid != edge.process.pid]


def held_connections(edge) -> dict[int, set[int]]:
    """The client ports of the connections each edge worker holds open."""
    held = {}
    for pid in workers(edge):
        with contextlib.suppress(psutil.NoSuchProcess):
            held[pid] = {
                conn.raddr.port
                for conn in psutil.Process(pid).net_connections(kind="tcp")
                if conn.status == psutil.CONN_ESTABLISHED and conn.laddr.port == edge.port and conn.raddr
            }
    return held


def serving(edge) -> list[int]:
    """The edge's workers holding a client's connection open."""
    return [pid for pid, ports in held_connections(edge).items() if ports]


def worker_holding(edge, conn: http.client.HTTPConnection) -> int | None:
    """The edge worker that accepted `conn` and keeps it open, if one does."""
    port = conn.sock.getsockname()[1]
    return next((pid for pid, ports in held_connections(edge).items() if port in ports), None)


def on_each_worker(edge, path: str, *, tries: int = 60) -> dict[int, tuple[int, str | None]]:
    """`path` asked of every worker of the edge: the status and Location each
    answered, by worker. A new connection goes to whichever worker the
    kernel wakes, and eight in a row can all go to one; each is kept open
    (so that its worker can be found) until every worker has answered one."""
    answers: dict[int, tuple[int, str | None]] = {}
    held = []
    try:
        for _ in range(tries):
            conn = http.client.HTTPConnection("127.0.0.1", edge.port, timeout=10)
            held.append(conn)
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            pid = worker_holding(edge, conn)
            if pid is not None:
                answers.setdefault(pid, (response.status, response.headers.get("Location")))
            if set(answers) >= set(workers(edge)):
                return answers
    finally:
        for conn in held:
            conn.close()
    raise AssertionError(f"{tries} connections reached only workers {sorted(answers)} of {workers(edge)}")


def raw_request(port: int, target: bytes, *, method: bytes = b"GET") -> bytes:
    """Sends the request line as given, bytes no client library would send
    included, and returns the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(method + b" " + target + b" HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


class Traffic:
    """Visitors asking for one path over and over, each time on a new
    connection (so that every worker, old or new, gets some), for as long as
    the `with` block lasts. `served` holds the statuses, `failed` the
    connections refused or reset."""

    def __init__(self, port: int, path: str, *, visitors: int = 3) -> None:
        self.port, self.path = port, path
        self.served: list[int] = []
        self.failed: list[OSError] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._visit, args=(n,)) for n in range(visitors)]

    def _visit(self, n: int) -> None:
        while not self._stop.is_set():
            try:
                status = http_request(self.port, self.path, headers={"User-Agent": f"visitor-{n}"}).status
            except OSError as error:
                self.failed.append(error)
                continue
            self.served.append(status)

    def __enter__(self) -> "Traffic":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


class PrivateRedis:
    """A Redis of one test's own (append-only, so a restart keeps the
    stream), which the test may stop and start."""

    def __init__(self) -> None:
        self.stack = ThrowawayStack(prefix="slingshot-redis-", durable=True)

    def start(self) -> "PrivateRedis":
        self.stack.start_redis()
        return self

    def stop(self) -> None:
        if self.stack.redis.poll() is None:
            self.stack.stop_redis()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.stack.redis_port, password=self.stack.redis_password)

    def edge_env(self) -> dict[str, str]:
        return {"REDIS_PORT": str(self.stack.redis_port), "REDIS_PASSWORD": self.stack.redis_password}

    def cleanup(self) -> None:
        self.stack.cleanup()

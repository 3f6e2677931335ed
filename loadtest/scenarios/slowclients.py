"""Slow clients against the dashboard, and how long what people and the
edges ask takes meanwhile: tests/test_stack.py runs it briefly against its
stack, loadtest/slow_clients.py (`make slow-clients`) for a minute.

A slow client is what a slowloris opens: a connection that sends its
request a little at a time, a header line every few seconds or its body a
byte at a time, and that is opened again as soon as the server lets it go.
A gunicorn sync worker waits on one such connection for as long as it
lasts; the dashboard's front (dashboard/nginx.conf) holds them itself. The
probes are the requests that must still be answered: the dashboard's pages
and sign-in page, its API, and, through the edge, a link's password check
and the YOURLS API.
"""

import http.client
import json
import random
import secrets
import selectors
import socket
import statistics
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

from devstack.supervised import SupervisedStack, session_cookie, sign_in, wait_until

HEADERS = "headers"  # a header line every interval, the headers never ending
BODY = "body"  # the headers at once, then the body a byte every interval


@dataclass
class _Connection:
    index: int
    kind: str
    sock: socket.socket | None = None
    next_send: float = 0.0
    sent: int = 0


class SlowClients:
    """`connections` slow clients of 127.0.0.1:`port`, from `sources`
    addresses of 127.0.0.0/8 (no server sees one address only), a quarter
    of them slow with their body, on a thread of their own."""

    def __init__(
        self,
        port: int,
        *,
        connections: int,
        interval: float = 5.0,
        sources: int = 50,
        path: str = "/sign-in/",
        body_share: float = 0.25,
    ) -> None:
        self.port, self.path, self.interval = port, path, interval
        self.sources = [f"127.1.{n // 250}.{n % 250 + 1}" for n in range(sources)]
        bodies = round(connections * body_share)
        self.connections = [_Connection(n, BODY if n < bodies else HEADERS) for n in range(connections)]
        self.opened = 0  # connections made, first ones and again
        self.let_go = 0  # connections the server answered or closed
        self.failed = 0  # connections that could not be made
        self._selector = selectors.DefaultSelector()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self, *, timeout: float = 30.0) -> "SlowClients":
        """Opens them all, then keeps them slow until stop()."""
        self._thread.start()
        wait_until(lambda: self.held() == len(self.connections), timeout=timeout, what="every slow client connected")
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=30)

    def held(self) -> int:
        """How many are connected now."""
        return sum(connection.sock is not None for connection in self.connections)

    def _run(self) -> None:
        try:
            for connection in self.connections:
                self._open(connection)
            while not self._stopping.is_set():
                now = time.monotonic()
                for connection in self.connections:
                    if connection.sock is None:
                        self._open(connection)
                    elif now >= connection.next_send:
                        self._send(connection, self._next_piece(connection))
                for key, _ in self._selector.select(timeout=0.1):
                    self._answered(key.data)
        finally:
            for connection in self.connections:
                self._close(connection)
            self._selector.close()

    def _open(self, connection: _Connection) -> None:
        source = self.sources[connection.index % len(self.sources)]
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5, source_address=(source, 0))
        except OSError:
            self.failed += 1
            return
        sock.setblocking(False)
        connection.sock, connection.sent = sock, 0
        self.opened += 1
        self._selector.register(sock, selectors.EVENT_READ, connection)
        self._send(connection, self._first_piece(connection))
        # Spread over the interval, so that the server sees a trickle.
        connection.next_send = time.monotonic() + random.uniform(0, self.interval)

    def _first_piece(self, connection: _Connection) -> bytes:
        host = f"Host: 127.0.0.1:{self.port}\r\nUser-Agent: slow-client\r\n"
        if connection.kind == BODY:
            return (
                f"POST {self.path} HTTP/1.1\r\n{host}Content-Type: application/x-www-form-urlencoded\r\n"
                "Content-Length: 1000000\r\n\r\n"
            ).encode()
        return f"GET {self.path} HTTP/1.1\r\n{host}".encode()

    def _next_piece(self, connection: _Connection) -> bytes:
        connection.next_send = time.monotonic() + self.interval
        connection.sent += 1
        return b"a" if connection.kind == BODY else f"X-Slow-{connection.sent}: {connection.sent}\r\n".encode()

    def _send(self, connection: _Connection, piece: bytes) -> None:
        try:
            connection.sock.send(piece)
        except OSError:  # let go: reset, or closed while this was on its way
            self.let_go += 1
            self._close(connection)

    def _answered(self, connection: _Connection) -> None:
        """The server said something (a 408, a 400) or closed: a slow
        client has nothing to say to that but to come again."""
        try:
            connection.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            pass
        self.let_go += 1
        self._close(connection)

    def _close(self, connection: _Connection) -> None:
        if connection.sock is not None:
            self._selector.unregister(connection.sock)
            connection.sock.close()
            connection.sock = None


# --- what must still be answered -------------------------------------------------


@dataclass
class Probe:
    """One request, made again and again: `ask` makes it and says what was
    wrong with the answer, or '' when it was the one expected."""

    name: str
    ask: Callable[[], str]
    seconds: list[float] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)  # the answers that were not the one expected

    def once(self) -> None:
        started = time.monotonic()
        try:
            wrong = self.ask()
        except (OSError, http.client.HTTPException) as exc:
            wrong = f"{type(exc).__name__}: {exc}"
        took = time.monotonic() - started
        self.seconds.append(took)
        if wrong:
            self.wrong.append(f"after {took:.2f}s: {wrong}"[:300])

    def percentiles(self) -> dict[str, float]:
        """Seconds an answer took: the median, the 90th and 99th percentiles, the slowest."""
        cuts = statistics.quantiles(self.seconds * (2 if len(self.seconds) == 1 else 1), n=100, method="inclusive")
        return {"p50": cuts[49], "p90": cuts[89], "p99": cuts[98], "max": max(self.seconds)}

    def slower_than(self, seconds: float) -> int:
        return sum(took > seconds for took in self.seconds)


def probe_all(probes: list[Probe], *, seconds: float, between: Callable[[], None] = lambda: None) -> None:
    """Asks each probe in turn, one request at a time, for `seconds`;
    `between` is called after each round."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for probe in probes:
            probe.once()
        between()


def table(probes: list[Probe], *, within: float = 1.0) -> str:
    """Each probe's requests, latency percentiles, answers slower than
    `within` seconds and wrong answers."""
    lines = [f"{'':<22} {'requests':>8} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8} {f'>{within:g} s':>6} {'wrong':>6}"]
    for probe in probes:
        cut = probe.percentiles()
        lines.append(
            f"{probe.name:<22} {len(probe.seconds):>8} "
            + " ".join(f"{cut[name] * 1000:>6.1f}ms" for name in ("p50", "p90", "p99", "max"))
            + f" {probe.slower_than(within):>6} {len(probe.wrong):>6}"
        )
    return "\n".join(lines)


def _request(
    port: int, method: str, path: str, *, headers: dict | None = None, body: bytes | None = None, timeout: float
) -> http.client.HTTPResponse:
    """One request on a connection of its own, as a new visitor makes it;
    the answer read whole."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        answer = conn.getresponse()
        answer.body = answer.read()
        return answer
    finally:
        conn.close()


def _expect(answer: http.client.HTTPResponse, status: int, *, containing: bytes = b"", header: str = "") -> str:
    if answer.status != status:
        return f"HTTP {answer.status} {answer.body[:150]!r}"
    if containing not in answer.body:
        return f"HTTP {answer.status} without {containing!r}"
    if header and header not in answer.headers:
        return f"HTTP {answer.status} without {header}"
    return ""


def stack_probes(stack: SupervisedStack, *, timeout: float = 10.0) -> list[Probe]:
    """The probes of a running stack, each asking what a person or a client
    asks, with what they need made first: a superuser of its own, signed
    in through the front, an API token, and a link with a password that
    the edge serves."""
    user, password = f"probe-{secrets.token_hex(3)}", secrets.token_urlsafe(16)
    made = stack.manage("ensure_admin", "--username", user, env={"SLINGSHOT_ADMIN_PASSWORD": password})
    assert made.returncode == 0, made.stdout + made.stderr
    made = stack.manage("create_api_token", user, "--scope", "write", "--name", "slow-clients")
    assert made.returncode == 0, made.stdout + made.stderr
    token = made.stdout.strip()
    front, edge = stack.ports["DASHBOARD_PORT"], stack.ports["EDGE_PORT"]
    bearer = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    slug, link_password = f"locked-{secrets.token_hex(3)}", secrets.token_urlsafe(12)
    body = json.dumps({"url": "https://example.com/slow", "slug": slug, "password": link_password}).encode()
    created = _request(front, "POST", "/api/v1/links", headers=bearer, body=body, timeout=timeout)
    assert created.status == 201, (created.status, created.body[:300])
    wait_until(
        lambda: _request(edge, "GET", f"/{slug}", timeout=timeout).status == 200,
        timeout=60,
        what=f"the edge to serve /{slug}'s password page",
    )
    session = sign_in(stack, user, password)
    assert session is not None, f"{user} could not sign in"
    cookie = session_cookie(session)
    unlock = urllib.parse.urlencode({"ref": "", "password": link_password}).encode()
    form = {"Content-Type": "application/x-www-form-urlencoded", "User-Agent": "Mozilla/5.0 (probe)"}
    yourls = f"/yourls-api.php?action=db-stats&format=json&signature={token}"

    def page(path: str) -> Callable[[], str]:
        return lambda: _expect(_request(front, "GET", path, headers={"Cookie": cookie}, timeout=timeout), 200)

    return [
        Probe("sign-in page", lambda: _expect(_request(front, "GET", "/sign-in/", timeout=timeout), 200)),
        Probe("page: overview", page("/")),
        Probe("page: links", page("/links/")),
        Probe(
            "API: links",
            lambda: _expect(_request(front, "GET", "/api/v1/links", headers=bearer, timeout=timeout), 200),
        ),
        # The right password: the edge lets the visitor through only on the dashboard's word.
        Probe(
            "password check (edge)",
            lambda: _expect(
                _request(edge, "POST", f"/{slug}", headers=form, body=unlock, timeout=timeout),
                200,
                header="Set-Cookie",
            ),
        ),
        Probe(
            "YOURLS API (edge)",
            lambda: _expect(_request(edge, "GET", yourls, timeout=timeout), 200, containing=b'"db-stats"'),
        ),
    ]

"""Destinations for the checks' tests: an HTTP server on 127.0.0.1 that
answers each path as a destination might, and one speaking TLS with a
self-signed certificate. Each keeps the requests it saw, with when."""

import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from testing.listeners import RawServer, read_request, self_signed

SLOW_SECONDS = 4.0
LATE_SECONDS = 0.3


@dataclass
class Seen:
    requests: list[tuple[str, str, float]] = field(default_factory=list)  # method, path, time.monotonic()
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, method: str, path: str) -> None:
        with self.lock:
            self.requests.append((method, path, time.monotonic()))

    def of(self, path: str) -> list[str]:
        return [method for method, seen, _ in self.requests if seen == path]


def _answer(status: str, headers: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n".encode()


def answer_for(method: str, path: str, stop: threading.Event) -> bytes:
    """What each path answers: /ok 200, /gone 404, /error 500, /busy 429,
    /loop a redirect to itself, /moved one to /ok, /no-head 405 to HEAD
    and 200 to GET, /slow a 200 after SLOW_SECONDS, /late and /late-too
    a 200 after LATE_SECONDS."""
    if path == "/gone":
        return _answer("404 Not Found")
    if path == "/error":
        return _answer("500 Internal Server Error")
    if path == "/busy":
        return _answer("429 Too Many Requests")
    if path == "/loop":
        return _answer("302 Found", "Location: /loop\r\n")
    if path == "/moved":
        return _answer("301 Moved Permanently", "Location: /ok\r\n")
    if path == "/no-head" and method == "HEAD":
        return _answer("405 Method Not Allowed", "Allow: GET\r\n")
    if path == "/slow":
        stop.wait(SLOW_SECONDS)
    if path in ("/late", "/late-too"):
        stop.wait(LATE_SECONDS)
    return _answer("200 OK")


class Destinations(RawServer):
    """`at(path)` is a destination on this server."""

    def __init__(self):
        self.seen = Seen()
        super().__init__(self._serve_one)

    def at(self, path: str) -> str:
        return self.url + path

    def _serve_one(self, conn: socket.socket, stop: threading.Event) -> None:
        request = read_request(conn).decode("latin-1")
        method, path = (request.split(" ")[:2] + ["", ""])[:2]
        self.seen.add(method, path)
        conn.sendall(answer_for(method, path, stop))


class TlsDestination(RawServer):
    """HTTPS on localhost with a certificate no authority signed."""

    def __init__(self, directory: Path):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*self_signed(directory))

        def handler(conn: socket.socket, stop: threading.Event) -> None:
            with context.wrap_socket(conn, server_side=True) as tls:
                read_request(tls)
                tls.sendall(_answer("200 OK"))

        super().__init__(handler)
        self.https_url = f"https://localhost:{self.port}/"

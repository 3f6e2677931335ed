"""Servers on loopback for the tests of requests to addresses people give
(slingshot/outbound/, the importers, the Import page): a service of the
server's own network, which such a request must never reach, that counts
what it saw; and a server that answers as a test scripts it, badly."""

import datetime
import select
import socket
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SECRET = "internal-service-secret: the dashboard's admin token is hunter2"


class InternalService:
    """Listens on one port of 127.0.0.1 and, where the machine has it, ::1;
    answers every connection with a 404 holding SECRET (what a leak would
    show); `connections()` counts every connection made to it, including
    those still waiting in the kernel's accept queue."""

    def __init__(self):
        self._accepted = 0
        self.received: list[bytes] = []  # what each connection sent, in the order they came
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.sockets = _listeners()
        self.port = self.sockets[0].getsockname()[1]
        for sock in self.sockets:
            sock.setblocking(False)
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "InternalService":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.thread.join()
        for sock in self.sockets:
            sock.close()

    def connections(self) -> int:
        """Every connection made so far: a client whose connect() returned
        is counted, whether or not the thread got to it yet."""
        self._accept()
        return self._accepted

    def _serve(self) -> None:
        while not self._stop.is_set():
            select.select(self.sockets, [], [], 0.05)
            self._accept()

    def _accept(self) -> None:
        with self._lock:
            for listener in self.sockets:
                while True:
                    try:
                        conn, _ = listener.accept()
                    except (BlockingIOError, OSError):
                        break
                    self._accepted += 1
                    try:
                        conn.settimeout(1)
                        request = conn.recv(65536)  # read, so that closing does not reset the answer
                    except OSError:
                        request = b""
                    self.received.append(request)
                    body = SECRET.encode()
                    with suppress(OSError):
                        conn.sendall(
                            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                            + body
                        )
                    conn.close()


def _listeners() -> list[socket.socket]:
    """Listening sockets on one free port of 127.0.0.1 and of ::1 (when
    this machine has IPv6 loopback)."""
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        return [socket.create_server(("127.0.0.1", 0))]
    while True:
        first = socket.create_server(("127.0.0.1", 0))
        try:
            second = socket.create_server(("::1", first.getsockname()[1]), family=socket.AF_INET6)
        except OSError:  # that port is taken on ::1: another one
            first.close()
            continue
        return [first, second]


class RawServer:
    """A TCP server on a free port of 127.0.0.1 running `handler(conn, stop)`
    for each connection, each in a thread; `stop` is set when the test ends.
    `connections` counts those it accepted."""

    def __init__(self, handler: Callable[[socket.socket, threading.Event], None]):
        self.handler, self.stop = handler, threading.Event()
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.listener.settimeout(0.1)
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "RawServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self.listener.close()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn, suppress(OSError):  # the client went away
            self.handler(conn, self.stop)


def read_request(conn: socket.socket) -> bytes:
    """A request's line and headers, as a RawServer's handler reads them first."""
    conn.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def redirecting(location: str) -> Callable[[socket.socket, threading.Event], None]:
    """A RawServer handler answering every request with a 302 to `location`."""

    def handler(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode())

    return handler


def dripping(answer: bytes, every: float, *, head: bytes = b"") -> Callable[[socket.socket, threading.Event], None]:
    """A RawServer handler sending `head` at once, then `answer` a byte at a
    time, one every `every` seconds: each read gets something long before a
    read timeout."""

    def handler(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(head)
        for byte in answer:
            conn.sendall(bytes([byte]))
            if stop.wait(every):
                return

    return handler


def self_signed(directory: Path) -> tuple[str, str]:
    """A self-signed certificate for the name localhost, and its key, as
    files in `directory` (their paths)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)

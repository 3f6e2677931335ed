"""Requests through `GuardedAdapter`, whose connections connect only to
the addresses `allowed_addresses` gave (nothing is sent to a refused
address, so an open and a closed internal port look the same) and check the
peer again once connected; TLS verified on the host's name, with it as SNI.
`fetch` follows no redirect, reads the answer up to a cap of decoded bytes
(a gzip bomb is cut too), and under a deadline for the whole exchange
(connect, TLS, headers, body) that a watchdog enforces by shutting the
connection's socket down, since a read timeout alone does not bound a
server that sends a byte now and then.
"""

import heapq
import ipaddress
import itertools
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util.timeout import _DEFAULT_TIMEOUT

from .addresses import AddressPolicy, allowed_addresses, any_address, is_public_address, refused
from .errors import AddressRefused, TooLarge, TooSlow, UrlRefused
from .urls import check_url


class _Deadline:
    """The time a request has, connect to last byte. When it is up, every
    socket the request opened or reused is shut down (through a duplicate of
    its descriptor, so that one closed meanwhile is never confused with
    another that took its number), which ends any read blocked on it."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.expired = False
        self._lock = threading.Lock()
        self._done = False
        self._sockets: list[socket.socket] = []
        _WATCHDOG.watch(self)

    def left(self) -> float:
        return self.ends - time.monotonic()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if self._done:
                return
            try:
                duplicate = socket.fromfd(sock.fileno(), sock.family, sock.type)
            except OSError:
                return  # already closed: nothing to hold
            self._sockets.append(duplicate)
            if self.expired:
                _shut(duplicate)

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def close(self) -> None:
        with self._lock:
            self._done = True
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


class _Watchdog:
    """One thread a process ends every deadline that runs out (a thread a
    request cost more than the request itself, under load): it sleeps
    until the earliest deadline not done yet."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, _Deadline]] = []
        self._order = itertools.count()
        self._woken = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: _Deadline) -> None:
        with self._woken:
            heapq.heappush(self._due, (deadline.ends, next(self._order), deadline))
            if self._thread is None or not self._thread.is_alive():  # none yet, or a forked child's
                self._thread = threading.Thread(target=self._run, name="outbound-deadlines", daemon=True)
                self._thread.start()
            elif self._due[0][2] is deadline:
                self._woken.notify()

    def _run(self) -> None:
        with self._woken:
            while True:
                while self._due and self._due[0][2]._done:
                    heapq.heappop(self._due)
                if not self._due:
                    self._woken.wait()
                    continue
                left = self._due[0][0] - time.monotonic()
                if left > 0:
                    self._woken.wait(left)
                    continue
                deadline = heapq.heappop(self._due)[2]
                self._woken.release()
                try:
                    deadline._expire()
                finally:
                    self._woken.acquire()


_WATCHDOG = _Watchdog()


def _shut(sock: socket.socket) -> None:
    with suppress(OSError):  # not connected yet, or already gone
        sock.shutdown(socket.SHUT_RDWR)


# The deadline of the request this thread is making (`fetch` sets it), for
# the connections that requests makes deep below it.
_deadline: ContextVar[_Deadline | None] = ContextVar("outbound_deadline", default=None)


class _Guarded:
    """What GuardedAdapter's connections add to urllib3's: connect only to
    an address `allowed` accepts (looked up once, here, rather than by
    urllib3), check the peer once connected, and give every socket used to
    the current deadline."""

    allowed: AddressPolicy

    def _new_conn(self) -> socket.socket:
        host, port = self._dns_host, self.port
        try:
            found = allowed_addresses(host, port, allowed=self.allowed, timeout=self._time_left())
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        except TimeoutError as exc:
            raise ConnectTimeoutError(self, f"Looking {self.host} up timed out.") from exc
        error: OSError | None = None
        for family, kind, proto, _, address in found:
            timeout = self._time_left()
            sock = socket.socket(family, kind, proto)
            try:
                for option in self.socket_options or ():
                    sock.setsockopt(*option)
                if (deadline := _deadline.get()) is not None:
                    deadline.watch(sock)
                sock.settimeout(timeout)
                if self.source_address:
                    sock.bind(self.source_address)
                sock.connect(address)
                peer = sock.getpeername()[0]
            except OSError as exc:
                sock.close()
                error = exc
                continue
            if not self.allowed(ipaddress.ip_address(peer)):
                sock.close()
                raise AddressRefused(refused(host.strip("[]")))
            sys.audit("http.client.connect", self, self.host, self.port)
            return sock
        if isinstance(error, TimeoutError):
            raise ConnectTimeoutError(self, f"Connection to {self.host} timed out.") from error
        raise NewConnectionError(self, f"Failed to establish a new connection: {error}") from error

    def _time_left(self) -> float | None:
        """The connection's timeout, or less: what the deadline leaves."""
        timeout = socket.getdefaulttimeout() if self.timeout is _DEFAULT_TIMEOUT else self.timeout
        deadline = _deadline.get()
        if deadline is None:
            return timeout
        left = deadline.left()
        if left <= 0:
            raise ConnectTimeoutError(self, f"No time was left to connect to {self.host}.")
        return left if timeout is None else min(timeout, left)

    def request(self, *args, **kwargs):
        # A connection kept from an earlier request serves this one: its
        # socket is this request's to cut at the deadline too.
        deadline = _deadline.get()
        if deadline is not None and self.sock is not None:
            deadline.watch(self.sock)
        return super().request(*args, **kwargs)


def _pool_classes(allowed: AddressPolicy) -> dict[str, type]:
    policy = staticmethod(allowed)
    plain = type("GuardedHTTPConnection", (_Guarded, HTTPConnection), {"allowed": policy})
    tls = type("GuardedHTTPSConnection", (_Guarded, HTTPSConnection), {"allowed": policy})
    return {
        "http": type("GuardedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": plain}),
        "https": type("GuardedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": tls}),
    }


class GuardedAdapter(HTTPAdapter):
    """requests' adapter for http and https whose connections go only to
    addresses `allowed` accepts, to URLs `check_url` accepts, never through
    a proxy."""

    def __init__(self, *, allowed: AddressPolicy, **kwargs):
        self.allowed = allowed
        super().__init__(**kwargs)

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _pool_classes(self.allowed)

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        raise UrlRefused("Requests to addresses given by people go through no proxy.")

    def send(self, request: requests.PreparedRequest, **kwargs) -> requests.Response:
        check_url(request.url or "")
        return super().send(request, **kwargs)


def session(*, private_addresses: bool, headers: dict[str, str] | None = None) -> requests.Session:
    """A requests session that reaches only public addresses, unless
    `private_addresses`; that takes no proxy, .netrc or CA bundle from the
    environment; for `fetch`."""
    guarded = requests.Session()
    guarded.trust_env = False
    adapter = GuardedAdapter(allowed=any_address if private_addresses else is_public_address)
    guarded.adapters.clear()
    guarded.mount("http://", adapter)
    guarded.mount("https://", adapter)
    guarded.headers.update(headers or {})
    return guarded


@dataclass
class Answer:
    """What a server answered, its body read in full (and within the cap)."""

    status: int
    headers: CaseInsensitiveDict
    body: bytes | bytearray

    def json(self) -> Any:
        return json.loads(self.body)

    def text(self, limit: int) -> str:
        return bytes(self.body[: limit * 4]).decode("utf-8", errors="replace")[:limit]


def fetch(
    guarded: requests.Session,
    url: str,
    *,
    params: dict | list | None = None,
    read_timeout: float,
    deadline: float,
    max_bytes: int,
) -> Answer:
    """GET `url` through a `session`, following no redirect (a 3xx is
    answered as it is, its Location for the caller to name); the body up to
    `max_bytes` decoded bytes (TooLarge past them, never holding more), the
    whole exchange within `deadline` seconds (TooSlow), each read within
    `read_timeout`. UrlRefused, AddressRefused, or requests' own errors for a
    server that cannot be reached."""
    check_url(url)
    with _watched(deadline) as clock:
        try:
            response = guarded.get(
                url,
                params=params,
                timeout=(min(read_timeout, deadline), read_timeout),
                allow_redirects=False,
                stream=True,
            )
            with response:
                body = _read(response, max_bytes)
        except (requests.RequestException, OSError):
            if clock.expired or clock.left() <= 0:
                raise TooSlow(_too_slow(deadline)) from None
            raise
        if clock.expired:  # the watchdog ended the body: what came is not all of it
            raise TooSlow(_too_slow(deadline))
    return Answer(status=response.status_code, headers=response.headers, body=body)


def status_of(guarded: requests.Session, url: str, *, method: str, deadline: float) -> Answer:
    """`method` (HEAD or GET) on `url` through a `session`, as `fetch`
    follows no redirect, for the status line and headers alone: the body
    is never read (the connection is closed instead), and the exchange up
    to the last header is within `deadline` seconds (TooSlow). The
    Answer's body is empty. The same errors as `fetch` but TooLarge."""
    check_url(url)
    with _watched(deadline) as clock:
        try:
            response = guarded.request(method, url, timeout=(deadline, deadline), allow_redirects=False, stream=True)
        except (requests.RequestException, OSError):
            if clock.expired or clock.left() <= 0:
                raise TooSlow(_too_slow(deadline)) from None
            raise
        response.close()
    return Answer(status=response.status_code, headers=response.headers, body=b"")


def not_found(exc: requests.RequestException) -> bool:
    """Whether a request failed because its host's name does not resolve."""
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, NameResolutionError)


def _too_slow(deadline: float) -> str:
    return f"the answer did not come in full within {deadline:g} s"


@contextmanager
def _watched(seconds: float) -> Iterator[_Deadline]:
    clock = _Deadline(seconds)
    token = _deadline.set(clock)
    try:
        yield clock
    finally:
        _deadline.reset(token)
        clock.close()


def _read(response: requests.Response, max_bytes: int) -> bytearray:
    too_large = f"the answer is larger than {max_bytes / 1024 / 1024:g} MB"
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes and not response.headers.get("Content-Encoding"):
        raise TooLarge(too_large)
    body = bytearray()
    # Decoded chunks (urllib3 decompresses at most a chunk at a time), so a
    # small compressed answer that inflates past the cap is cut there too.
    for chunk in response.iter_content(64 * 1024):
        if len(body) + len(chunk) > max_bytes:
            raise TooLarge(too_large)
        body += chunk
    return body

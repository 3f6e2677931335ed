"""Requests this server makes to an address someone gave it (an import's
source; a webhook's endpoint will be another): they cannot be turned
against the server's own network (SSRF), and the server they go to cannot
hold them for ever or flood its memory.

Three layers, each usable without the next:

- `check_url`: a strict reading of a URL. http or https; no userinfo, no
  backslash, no whitespace or control character, a host that is a plain
  name, a dotted-quad IPv4 or a bracketed IPv6 (no other spelling of a
  number), a port of digits; and Python's `urlsplit` and urllib3's
  `parse_url` (what requests connects with) must read the same scheme, host
  and port, so that no check can read one host while the client reaches
  another.
- `is_public_address` (the policy) and `allowed_addresses` (a host's
  addresses, resolved once, every one of them checked).
- `session` and `fetch`: requests through `GuardedAdapter`, whose
  connections connect only to the addresses `allowed_addresses` gave
  (nothing is sent to a refused address, so an open and a closed internal
  port look the same) and check the peer again once connected; TLS verified
  on the host's name, with it as SNI. `fetch` follows no redirect, reads the
  answer up to a cap of decoded bytes (a gzip bomb is cut too), and under a
  deadline for the whole exchange (connect, TLS, headers, body) that a
  watchdog enforces by shutting the connection's socket down, since a read
  timeout alone does not bound a server that sends a byte now and then.
"""

import ipaddress
import json
import socket
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, LocationParseError, NameResolutionError, NewConnectionError
from urllib3.util import parse_url
from urllib3.util.connection import allowed_gai_family
from urllib3.util.timeout import _DEFAULT_TIMEOUT

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[Address], bool]


class OutboundError(Exception):
    """A request refused or cut short; its text is a sentence for the person
    who gave the address, which never holds what another server answered."""


class UrlRefused(OutboundError):
    pass


class AddressRefused(OutboundError):
    pass


class TooLarge(OutboundError):
    pass


class TooSlow(OutboundError):
    pass


# --- which addresses are public -----------------------------------------------------------

# Besides what Python's ipaddress does not call global: ranges its
# is_global calls global (or did, in a Python this may run on) that no
# server this product fetches from lives in, or that reach another network.
_NOT_PUBLIC = [
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",  # "this network": 0.0.0.0 reaches the host itself
        "100.64.0.0/10",  # carrier-grade NAT, the provider's own network
        "169.254.0.0/16",  # link-local, with the clouds' metadata service (169.254.169.254)
        "192.0.0.0/24",  # IETF protocol assignments
        "192.88.99.0/24",  # 6to4 relays
        "198.18.0.0/15",  # benchmarking
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
        "::/96",  # IPv4-compatible IPv6 (deprecated), :: and ::1 among them
        "64:ff9b:1::/48",  # NAT64 of a local network
        "100::/64",  # discard
        "2001::/32",  # Teredo: a tunnel to an IPv4 address
        "2001:db8::/32",  # documentation
        "2002::/16",  # 6to4: a tunnel to an IPv4 address
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing
        "fc00::/7",  # unique local (fd00::/8 among them)
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
]
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def is_public_address(address: str | Address) -> bool:
    """Whether an address is one of the public internet's, which a request
    someone asked for may reach: not loopback, a private network, link-local
    (the clouds' metadata service), carrier-grade NAT, multicast, reserved,
    nor an IPv6 address that carries a non-public IPv4 one (mapped, NAT64)
    or tunnels to an IPv4 one (compatible, 6to4, Teredo). An address with an
    IPv6 zone, or that is not an address, is not public."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if ip.version == 6:
        if ip.scope_id:
            return False
        if ip.ipv4_mapped is not None:  # a dual-stack socket connects to the IPv4 address
            return is_public_address(ip.ipv4_mapped)
        if ip in _NAT64:  # a NAT64 gateway connects to the IPv4 address in its last 32 bits
            return is_public_address(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if not ip.is_global or ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast:
        return False
    if ip.is_reserved or ip.is_unspecified:
        return False
    return not any(ip in network for network in _NOT_PUBLIC if network.version == ip.version)


def any_address(address: Address) -> bool:
    """The policy of a request whose caller allows private addresses (an
    import run on the server: docs/importing.md)."""
    return True


def allowed_addresses(
    host: str, port: int, *, allowed: AddressPolicy, timeout: float | None = None
) -> list[tuple[Any, ...]]:
    """The host's addresses (getaddrinfo's tuples), looked up once, within
    `timeout` seconds; AddressRefused if `allowed` refuses any of them (a
    name with a private address among its public ones is not fetched from
    either: which one a connection gets is not ours to choose)."""
    host = host.strip("[]")
    found = _lookup(host, port, timeout)
    if not found:
        raise socket.gaierror(f"no address for {host}")
    if not all(allowed(ipaddress.ip_address(info[4][0])) for info in found):
        raise AddressRefused(_refused(host))
    return found


def _refused(host: str) -> str:
    # The same sentence whatever the address and whether anything listens
    # there: it tells nothing of the network behind this server.
    return (
        f"{host} is, or resolves to, an address of a private network (loopback, RFC 1918, link-local, "
        "carrier-grade NAT, ...), which is not fetched from"
    )


def _lookup(host: str, port: int, timeout: float | None) -> list[tuple[Any, ...]]:
    if timeout is None:
        return socket.getaddrinfo(host, port, allowed_gai_family(), socket.SOCK_STREAM)
    # A resolver that does not answer cannot hold the request past its
    # deadline: the lookup runs in a thread that is left to finish alone.
    answer: dict[str, Any] = {}

    def look() -> None:
        try:
            answer["found"] = socket.getaddrinfo(host, port, allowed_gai_family(), socket.SOCK_STREAM)
        except BaseException as exc:  # handed to the caller's thread
            answer["error"] = exc

    thread = threading.Thread(target=look, name=f"lookup {host}", daemon=True)
    thread.start()
    thread.join(max(timeout, 0))
    if thread.is_alive():
        raise TimeoutError(f"looking {host} up took longer than {timeout:.0f} s")
    if "error" in answer:
        raise answer["error"]
    return answer["found"]


# --- a strict reading of a URL -------------------------------------------------------------

_LABEL = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def check_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http or https URL; UrlRefused, saying
    what is wrong, for anything two parsers could read differently or that
    spells an address in a form other than the usual one."""
    shown = quoted(url)
    if not isinstance(url, str) or not url:
        raise UrlRefused("An address is needed.")
    if any(char.isspace() or unicodedata.category(char).startswith("C") for char in url):
        raise UrlRefused(f"The address {shown} holds a space or a control character.")
    if "\\" in url:
        raise UrlRefused(f"The address {shown} holds a backslash, which clients read in different ways.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"The address {shown} cannot be read ({exc}).") from None
    if parts.scheme not in ("http", "https") or not url.lower().startswith(parts.scheme + "://"):
        raise UrlRefused(f"The address {shown} is not an http or https one.")
    netloc = parts.netloc
    if "@" in netloc:
        raise UrlRefused(f"The address {shown} holds a user name or password (before an @): give it without.")
    if "%" in netloc:
        raise UrlRefused(f"The address {shown} has a percent-encoded host or an IPv6 zone: give the host as it is.")
    if not netloc.isascii():
        raise UrlRefused(f"The address {shown} has a host that is not ASCII: give an international name as xn--....")
    if netloc.endswith(":") or (port is not None and not 0 < port < 65536):
        raise UrlRefused(f"The address {shown} has an empty or impossible port.")
    host = _checked_host(parts.hostname or "", shown)
    try:
        theirs = parse_url(url)
    except LocationParseError as exc:
        raise UrlRefused(f"The address {shown} cannot be read ({exc}).") from None
    if ((theirs.scheme or "").lower(), (theirs.host or "").lower().strip("[]"), theirs.port) != (
        parts.scheme,
        host,
        port,
    ):
        raise UrlRefused(f"The address {shown} is read differently by different clients.")
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80)


def _checked_host(host: str, shown: str) -> str:
    """The host of a URL (urlsplit's, lower case, without brackets) if it is
    a name, a dotted-quad IPv4 or an IPv6 address without a zone."""
    if not host:
        raise UrlRefused(f"The address {shown} has no host.")
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise UrlRefused(f"The address {shown} has a host that is not an IPv6 address.") from None
        return host
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    last = labels[-1]
    if last.isdigit() or last.startswith("0x"):
        # What WHATWG URL parsers and getaddrinfo read as a number: only the
        # usual four decimal parts (127.1, 0x7f.1, 2130706433, 0177.0.0.1
        # are all 127.0.0.1 to some and a name to others).
        try:
            if str(ipaddress.IPv4Address(host)) == host:
                return host
        except ValueError:
            pass
        raise UrlRefused(f"The address {shown} spells an IPv4 address in an unusual form: write it as a.b.c.d.")
    if len(host) > 254 or not all(_name_label(label) for label in labels):
        raise UrlRefused(f"The address {shown} has a host that is not a valid name.")
    return host


def _name_label(label: str) -> bool:
    return 0 < len(label) < 64 and set(label) <= _LABEL and not label.startswith("-") and not label.endswith("-")


def quoted(url: object) -> str:
    """The URL as a message may quote it: control characters and spaces
    escaped, cut to 200 characters."""
    if not isinstance(url, str):
        return repr(url)
    text = "".join(
        repr(char)[1:-1] if char.isspace() or unicodedata.category(char).startswith("C") else char for char in url
    )
    return f"'{text[:200]}{'…' if len(text) > 200 else ''}'"


# --- requests, connected only where the policy allows ----------------------------------------


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
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

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
        self._timer.cancel()
        with self._lock:
            self._done = True
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


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
                raise AddressRefused(_refused(host.strip("[]")))
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

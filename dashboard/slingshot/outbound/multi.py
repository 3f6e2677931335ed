"""Many POSTs at once from one thread, on libcurl's multi interface
(pycurl): for a sender of many small requests (webhooks), where a Python
HTTP client's own work a request is the limit. Held to the same policy as
guarded.py's requests: `check_url` for the URL, and every address libcurl
is about to connect to (each of a name's, looked up by libcurl, at the
moment it connects: no DNS rebinding) asked of the address policy first;
no proxy, no redirect, http and https only, TLS verified, the whole
exchange within a deadline, and the first `keep_bytes` of an answer kept
with no more read.
"""

import ipaddress
import socket
import time
from collections.abc import Hashable
from dataclasses import dataclass

import certifi
import pycurl

from .addresses import AddressPolicy, refused
from .urls import check_url

_PROTOCOLS = pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS


@dataclass
class Reply:
    """How a POST ended: `status` and the start of `body`, or `error` (a
    sentence that holds nothing the server sent) when no answer came."""

    status: int | None
    body: bytes
    error: str
    seconds: float


class _Transfer:
    __slots__ = ("key", "body", "keep", "refused_host", "started")

    def __init__(self, key: Hashable, keep: int):
        self.key, self.body, self.keep, self.refused_host = key, bytearray(), keep, ""
        self.started = time.monotonic()

    def write(self, data: bytes):
        room = self.keep - len(self.body)
        self.body += data[:room]
        if len(data) > room:
            return 0  # enough: libcurl ends the transfer here
        return None


class MultiPoster:
    """POSTs started with `post` and finished by `run`, all in the thread
    that calls them."""

    def __init__(self, *, allowed: AddressPolicy, timeout: float, keep_bytes: int, connections: int = 256):
        self.allowed, self.timeout, self.keep_bytes = allowed, timeout, keep_bytes
        self._multi = pycurl.CurlMulti()
        self._multi.setopt(pycurl.M_MAXCONNECTS, connections)
        self._idle: list[pycurl.Curl] = []
        self._running: dict[pycurl.Curl, _Transfer] = {}

    def __len__(self) -> int:
        return len(self._running)

    def post(self, key: Hashable, url: str, body: bytes, headers: dict[str, str]) -> None:
        """Starts a POST; its Reply comes out of `run` with `key`. A URL
        check_url refuses raises OutboundError at once."""
        check_url(url)
        handle = self._idle.pop() if self._idle else self._new_handle()
        transfer = _Transfer(key, self.keep_bytes)
        handle.setopt(pycurl.URL, url)
        handle.setopt(pycurl.POSTFIELDS, body)
        handle.setopt(pycurl.HTTPHEADER, [f"{name}: {value}" for name, value in headers.items()])
        handle.setopt(pycurl.WRITEFUNCTION, transfer.write)
        handle.setopt(pycurl.OPENSOCKETFUNCTION, lambda purpose, address: self._open(transfer, address))
        self._running[handle] = transfer
        self._multi.add_handle(handle)

    def _new_handle(self) -> pycurl.Curl:
        handle = pycurl.Curl()
        handle.setopt(pycurl.PROTOCOLS, _PROTOCOLS)
        handle.setopt(pycurl.REDIR_PROTOCOLS, _PROTOCOLS)
        handle.setopt(pycurl.FOLLOWLOCATION, 0)
        handle.setopt(pycurl.NOPROXY, "*")
        handle.setopt(pycurl.NOSIGNAL, 1)
        handle.setopt(pycurl.TIMEOUT_MS, int(self.timeout * 1000))
        handle.setopt(pycurl.CONNECTTIMEOUT_MS, int(self.timeout * 1000))
        handle.setopt(pycurl.CAINFO, certifi.where())
        handle.setopt(pycurl.SSL_VERIFYPEER, 1)
        handle.setopt(pycurl.SSL_VERIFYHOST, 2)
        handle.setopt(pycurl.NETRC, pycurl.NETRC_IGNORED)
        handle.setopt(pycurl.ACCEPT_ENCODING, None)  # the answer as sent: its first KiB is what is kept
        return handle

    def _open(self, transfer: _Transfer, address):
        host = address.addr[0]
        if not self.allowed(ipaddress.ip_address(host.split("%", 1)[0])):
            transfer.refused_host = host
            return pycurl.SOCKET_BAD
        return socket.socket(address.family, address.socktype, address.protocol)

    def run(self, wait: float) -> list[tuple[Hashable, Reply]]:
        """Moves every transfer on, waiting up to `wait` seconds for one to
        have something to do; the ones that ended, with their replies."""
        self._perform()
        if self._running and wait > 0:
            self._multi.select(wait)
            self._perform()
        done = []
        while True:
            left, finished, failed = self._multi.info_read()
            for handle in finished:
                done.append(self._end(handle, None))
            for handle, code, message in failed:
                done.append(self._end(handle, (code, message)))
            if not left:
                break
        return done

    def _perform(self) -> None:
        while self._multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass

    def _end(self, handle: pycurl.Curl, failure) -> tuple[Hashable, Reply]:
        transfer = self._running.pop(handle)
        self._multi.remove_handle(handle)
        seconds = time.monotonic() - transfer.started
        status = handle.getinfo(pycurl.RESPONSE_CODE) or None
        error = ""
        if failure is not None and not (failure[0] == pycurl.E_WRITE_ERROR and status):
            status = None
            error = _why(failure[0], transfer, self.timeout)
        handle.setopt(pycurl.WRITEFUNCTION, _discard)
        handle.setopt(pycurl.OPENSOCKETFUNCTION, _no_socket)
        self._idle.append(handle)
        return transfer.key, Reply(status, bytes(transfer.body), error, seconds)

    def close(self) -> None:
        for handle in list(self._running):
            self._multi.remove_handle(handle)
            handle.close()
        self._running.clear()
        for handle in self._idle:
            handle.close()
        self._idle.clear()
        self._multi.close()


def _discard(data: bytes) -> None:
    return None


def _no_socket(purpose, address):
    return pycurl.SOCKET_BAD


def _why(code: int, transfer: _Transfer, timeout: float) -> str:
    if transfer.refused_host:
        return refused(transfer.refused_host)
    if code == pycurl.E_OPERATION_TIMEDOUT:
        return f"the receiver did not answer in full within {timeout:g} s"
    if code == pycurl.E_COULDNT_RESOLVE_HOST:
        return "the receiver's host name does not resolve"
    if code in (pycurl.E_COULDNT_CONNECT, pycurl.E_SEND_ERROR, pycurl.E_RECV_ERROR, pycurl.E_GOT_NOTHING):
        return "the receiver could not be reached, or closed the connection"
    if code in (pycurl.E_SSL_CONNECT_ERROR, pycurl.E_PEER_FAILED_VERIFICATION, pycurl.E_SSL_CACERT):
        return "the receiver's TLS certificate could not be verified"
    return f"the request failed (libcurl error {code})"

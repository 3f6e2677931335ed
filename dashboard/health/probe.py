"""Asking a destination whether it still answers, as `manage.py check_links`
does for each active link (health/rounds.py): HEAD, then GET when HEAD is
refused or fails in a way GET may not; redirects followed up to
MAX_REDIRECTS, each hop's address checked where the connection is made
(slingshot/outbound/); at most one request to a host every `interval`
seconds, whichever thread sends it (HostTurns). Nothing here touches the
database.

What makes a destination broken: its name does not resolve (dns), it
answers 4xx (but 429, which says it is up) or 5xx, its TLS fails, it
redirects more than MAX_REDIRECTS times, no answer within the timeout, no
connection, or an address that is not public (refused_address, and the
request never sent)."""

import http
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import requests

from slingshot.outbound import AddressRefused, OutboundError, TooSlow, UrlRefused, guarded
from slingshot.release import VERSION

from .models import Reason

MAX_REDIRECTS = 5
USER_AGENT = f"Slingshot/{VERSION} (link health check)"
# Answers to HEAD that say nothing of GET: refused (405, 501) or any
# other failure, which some servers give HEAD alone.
_GET_AFTER_HEAD_FROM = 400


class Stopped(Exception):
    """The check was asked to stop while it waited for a host's turn."""


@dataclass(frozen=True)
class Outcome:
    """What a check found: `reason` is '' when the destination works."""

    reason: str
    http_status: int | None
    detail: str
    final_url: str

    @property
    def broken(self) -> bool:
        return bool(self.reason)


class HostTurns:
    """At most one request to a host every `interval` seconds, whichever
    thread asks: each caller is given the next free moment of the host and
    sleeps until it (Stopped if `stop` is set meanwhile). `done` counts the
    interval again from the end of a request, so that the host itself sees
    it between the answer it gave and the next request, however long the
    connection or the answer took."""

    def __init__(self, interval: float, stop: threading.Event | None = None):
        self.interval = interval
        self.stop = stop or threading.Event()
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, host: str) -> None:
        with self._lock:
            now = time.monotonic()
            at = max(now, self._next.get(host, now))
            self._next[host] = at + self.interval
        if self.stop.wait(max(0.0, at - now)) or self.stop.is_set():
            raise Stopped(host)

    def done(self, host: str) -> None:
        with self._lock:
            self._next[host] = max(self._next.get(host, 0.0), time.monotonic() + self.interval)


def host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


class Prober:
    """Checks destinations through one guarded session: one Prober per
    thread (a requests session is not shared between threads)."""

    def __init__(self, *, turns: HostTurns, timeout: float, private_addresses: bool):
        self.turns, self.timeout = turns, timeout
        self.session = guarded.session(
            private_addresses=private_addresses, headers={"User-Agent": USER_AGENT, "Accept": "*/*"}
        )

    def close(self) -> None:
        self.session.close()

    def check(self, url: str) -> Outcome:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                answer = self._ask(current)
                status, location = answer.status, answer.headers.get("Location", "")
                if not (300 <= status < 400 and location):
                    return by_status(status, current)
                current = _next_hop(current, location)
            except (OutboundError, requests.RequestException, OSError) as exc:
                return _failed(exc, current, self.timeout)
            if not current.lower().startswith(("http://", "https://")):
                # An app's or a mail address: the redirect is the answer.
                return Outcome("", status, f"redirects to a {urlsplit(current).scheme or 'non-web'} address", current)
        return Outcome(Reason.TOO_MANY_REDIRECTS, status, f"more than {MAX_REDIRECTS} redirects (a loop?)", current)

    def _ask(self, url: str) -> guarded.Answer:
        try:
            answer = self._request("HEAD", url)
            if answer.status < _GET_AFTER_HEAD_FROM:
                return answer
        except requests.ConnectionError as exc:
            if failure(exc, url, self.timeout)[0] != Reason.CONNECT:
                raise
        return self._request("GET", url)

    def _request(self, method: str, url: str) -> guarded.Answer:
        host = host_of(url)
        self.turns.wait(host)
        try:
            return guarded.status_of(self.session, url, method=method, deadline=self.timeout)
        finally:
            self.turns.done(host)


def _next_hop(url: str, location: str) -> str:
    try:
        return urljoin(url, location.strip())
    except ValueError:
        raise UrlRefused(f"it redirects to {location[:100]!r}, which is not an address") from None


def by_status(status: int, url: str) -> Outcome:
    try:
        said = f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        said = str(status)
    if status == 429:
        return Outcome("", status, f"answered {said}: it is up, and asked for fewer requests", url)
    if 400 <= status < 500:
        return Outcome(Reason.HTTP_4XX, status, f"answered {said}", url)
    if status >= 500:
        return Outcome(Reason.HTTP_5XX, status, f"answered {said}", url)
    return Outcome("", status, f"answered {said}", url)


def failure(exc: BaseException, url: str, timeout: float) -> tuple[str, str]:
    """(reason, detail) of a request that got no answer, in words of ours:
    never what the server sent."""
    host = host_of(url) or url[:100]
    if isinstance(exc, AddressRefused | UrlRefused):
        return Reason.REFUSED_ADDRESS, str(exc)[:300]
    if isinstance(exc, TooSlow | requests.Timeout | TimeoutError):
        return Reason.TIMEOUT, f"no answer from {host} within {timeout:g} s"
    if isinstance(exc, requests.exceptions.SSLError):
        verify = _verify_message(exc)
        return Reason.TLS, f"the TLS handshake with {host} failed" + (f": {verify}" if verify else "")
    if isinstance(exc, requests.RequestException) and guarded.not_found(exc):
        return Reason.DNS, f"{host} does not resolve"
    return Reason.CONNECT, f"no connection to {host} ({type(exc).__name__})"


def _failed(exc: BaseException, url: str, timeout: float) -> Outcome:
    reason, detail = failure(exc, url, timeout)
    return Outcome(reason, None, detail, url)


def _verify_message(exc: BaseException) -> str:
    """Why the certificate was refused, as OpenSSL says it ('self-signed
    certificate', 'Hostname mismatch, ...'), found in the exception's chain."""
    seen: set[int] = set()
    pending: list[object] = [exc]
    while pending:
        item = pending.pop()
        if id(item) in seen or not isinstance(item, BaseException):
            continue
        seen.add(id(item))
        if isinstance(item, ssl.SSLCertVerificationError):
            return str(item.verify_message or "")[:200]
        pending.extend([item.__cause__, item.__context__, *item.args, getattr(item, "reason", None)])
    return ""

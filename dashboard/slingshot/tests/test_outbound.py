"""Requests to addresses people give (slingshot/outbound/), against real
sockets on loopback: with private addresses refused, no spelling of this
machine's own addresses reaches the service listening there (not even a
connection); with them allowed, the same service answers, so the count
that proves the refusals can fail. Then the redirects not followed, the
cap on an answer's size, the deadline on the whole exchange, TLS."""

import gzip
import io
import os
import socket
import ssl
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable

import pytest
import requests

from slingshot import outbound
from slingshot.outbound import guarded
from slingshot.release import DASHBOARD_DIR
from testing.listeners import SECRET, InternalService, RawServer, dripping, read_request, redirecting, self_signed

MB = 1024 * 1024
PUBLIC = "93.184.216.34"  # a public address no test connects to


def fetch(url: str, *, private: bool = False, deadline: float = 10, max_bytes: int = MB, session=None):
    return guarded.fetch(
        session or guarded.session(private_addresses=private),
        url,
        read_timeout=30,
        deadline=deadline,
        max_bytes=max_bytes,
    )


@pytest.fixture
def service():
    with InternalService() as running:
        yield running


# --- the policy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.255.255.254",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "0.0.0.0",
        "0.1.2.3",
        "100.64.0.1",  # carrier-grade NAT
        "169.254.169.254",  # the clouds' metadata service
        "192.0.0.9",
        "192.0.2.1",
        "192.88.99.1",
        "198.18.0.1",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "::127.0.0.1",  # IPv4-compatible
        "::808:808",
        "64:ff9b::127.0.0.1",  # NAT64 of loopback
        "64:ff9b::a00:1",
        "64:ff9b:1::808:808",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:808:808::1",  # 6to4 at all: a tunnel
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "2001:db8::1",
        "fc00::1",
        "fd00::1",
        "fd12:3456:789a::1",
        "fe80::1",
        "fe80::1%1",
        "fec0::1",
        "ff02::1",
        "100::1",
        "5f00::1",
        "3fff::1",
        "not an address",
    ],
)
def test_an_address_of_no_public_network_is_refused(address):
    assert outbound.is_public_address(address) is False


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", PUBLIC, "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]
)
def test_a_public_address_is_allowed(address):
    assert outbound.is_public_address(address) is True


# --- the URL ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://example.com\\@127.0.0.1/", "backslash"),
        ("http://127.0.0.1\\@example.com/", "backslash"),
        ("http:\\\\example.com/", "backslash"),
        ("http://user@example.com/", "user name or password"),
        ("http://user:pw@example.com/", "user name or password"),
        ("http://example.com%2f@127.0.0.1/", "user name or password"),
        ("http://exa%6dple.com/", "percent-encoded"),
        ("http://[fe80::1%25eth0]/", "IPv6 zone"),
        ("http://exa\tmple.com/", "control character"),
        ("http://example.com\n/", "control character"),
        ("http://example.com/\r\nX-Injected: 1", "control character"),
        (" http://example.com/", "space"),
        ("http://example.com\u3000/", "space"),
        ("http://\u200bexample.com/", "control character"),
        ("http://１２７.０.０.１/", "not ASCII"),
        ("http://127。0。0。1/", "not ASCII"),
        ("http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", "not ASCII"),
        ("http://2130706433/", "unusual form"),
        ("http://0x7f.1/", "unusual form"),
        ("http://0x7f000001/", "unusual form"),
        ("http://0177.0.0.1/", "unusual form"),
        ("http://127.1/", "unusual form"),
        ("http://127.0.0.1./", "unusual form"),
        ("http://1.2.3.4.5/", "unusual form"),
        ("http://example.123/", "unusual form"),
        ("http://exa mple.com/", "space"),
        ("http://exa!mple.com/", "not a valid name"),
        ("http://-/", "not a valid name"),
        ("http://./", "not a valid name"),
        ("http://" + "a" * 64 + ".com/", "not a valid name"),
        ("http://[::1/", "cannot be read"),
        ("http://[not:an:address]/", "cannot be read"),
        ("http://[127.0.0.1]/", "cannot be read"),
        ("http://example.com:/", "port"),
        ("http://example.com:0/", "port"),
        ("http://example.com:99999/", "cannot be read"),
        ("http://example.com:+80/", "cannot be read"),
        ("http://example.com:80:80/", "cannot be read"),
        ("ftp://example.com/", "not an http or https"),
        ("file:///etc/passwd", "not an http or https"),
        ("http:example.com/", "not an http or https"),
        ("//example.com/", "not an http or https"),
        ("http:///", "no host"),
        ("", "needed"),
    ],
)
def test_a_url_clients_could_read_differently_is_refused_saying_why(url, said):
    with pytest.raises(outbound.UrlRefused, match=said):
        outbound.check_url(url)


@pytest.mark.parametrize(
    ("url", "read"),
    [
        ("https://api-ssl.bitly.com/v4", ("https", "api-ssl.bitly.com", 443)),
        ("HTTP://Shlink.Example.COM:8080/rest/v3", ("http", "shlink.example.com", 8080)),
        ("http://203.0.113.7/", ("http", "203.0.113.7", 80)),
        ("http://[2001:db8::1]:8443/x", ("http", "2001:db8::1", 8443)),
        ("https://xn--bcher-kva.example/a?b=c@d#e", ("https", "xn--bcher-kva.example", 443)),
        ("http://kutt_app:3000/api", ("http", "kutt_app", 3000)),
        ("http://localhost./", ("http", "localhost.", 80)),
    ],
)
def test_a_plain_url_is_read_as_written(url, read):
    assert outbound.check_url(url) == read


# The URL check and the address policy in a process of their own: what a
# deliverer with another client than requests would import.
WITHOUT_REQUESTS = """
import sys
from slingshot.outbound import AddressRefused, allowed_addresses, check_url, is_public_address
assert check_url("https://example.com/x") == ("https", "example.com", 443)
assert not is_public_address("169.254.169.254")
try:
    allowed_addresses("127.0.0.1", 80, allowed=is_public_address)
    raise SystemExit("127.0.0.1 allowed")
except AddressRefused:
    pass
print(sorted(name for name in sys.modules if name.split(".")[0] == "requests"))
"""


def test_the_url_check_and_the_address_policy_need_no_requests():
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_REQUESTS],
        cwd=DASHBOARD_DIR,
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- no spelling of this machine reaches it ---------------------------------------------------

SPELLINGS = [
    "http://127.0.0.1:{port}/",
    "http://127.0.0.1:{port}#@example.com/",
    "http://example.com\\@127.0.0.1:{port}/",
    "http://127.0.0.1:{port}\\@example.com/",
    "http:\\\\127.0.0.1:{port}/",
    "http://user@127.0.0.1:{port}/",
    "http://example.com:80@127.0.0.1:{port}/",
    "http://example.com%2f@127.0.0.1:{port}/",
    "http://[::1]:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",
    "http://[::ffff:7f00:1]:{port}/",
    "http://[::127.0.0.1]:{port}/",
    "http://[0:0:0:0:0:ffff:127.0.0.1]:{port}/",
    "http://[::]:{port}/",
    "http://[0:0:0:0:0:0:0:1]:{port}/",
    "http://[64:ff9b::7f00:1]:{port}/",
    "http://[::1%25lo]:{port}/",
    "http://2130706433:{port}/",
    "http://0x7f.1:{port}/",
    "http://0X7F.0.0.1:{port}/",
    "http://127.000.000.001:{port}/",
    "http://127.0.0.1%2e:{port}/",
    "http://127.0.0.1 :{port}/",
    "http://127.0.0.1:{port}?@example.com/",
    "http://127.0.0.1:{port};@example.com/",
    "http://0x7f000001:{port}/",
    "http://0177.0.0.1:{port}/",
    "http://127.1:{port}/",
    "http://127.0.0.1.:{port}/",
    "http://0.0.0.0:{port}/",
    "http://0:{port}/",
    "http://localhost:{port}/",
    "http://LOCALHOST:{port}/",
    "http://localhost.:{port}/",
    "http://127.0.0.1:{port}\t/",
    "http://127.0.0.1\n:{port}/",
    "http://127.0.0.1:{port}/\r\nHost: example.com",
    "http://１２７.０.０.１:{port}/",
    "http://127。0。0。1:{port}/",
    "http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ:{port}/",
    "https://127.0.0.1:{port}/",
    "https://localhost:{port}/",
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_no_spelling_of_loopback_gets_a_connection(service, spelling):
    # Refused; or, a name this machine does not resolve (localhost. on some), not found.
    with pytest.raises((outbound.OutboundError, requests.ConnectionError)) as refused:
        fetch(spelling.format(port=service.port))

    assert service.connections() == 0 and SECRET not in str(refused.value)


@pytest.mark.parametrize(
    "spelling",
    [
        "http://127.0.0.1:{port}/",
        "http://localhost:{port}/",
        "http://[::ffff:127.0.0.1]:{port}/",
        "http://0.0.0.0:{port}/",
    ],
)
def test_with_private_addresses_allowed_the_same_service_answers(service, spelling):
    answer = fetch(spelling.format(port=service.port), private=True)

    assert (answer.status, answer.text(200)) == (404, SECRET)
    assert service.connections() == 1


def test_an_open_and_a_closed_port_are_refused_alike(service):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: a connection would be refused
        messages = set()
        for port in (service.port, closed.getsockname()[1]):
            with pytest.raises(outbound.AddressRefused) as refused:
                fetch(f"http://127.0.0.1:{port}/")
            messages.add(str(refused.value))

    assert len(messages) == 1 and "private network" in messages.pop()
    assert service.connections() == 0


def resolver(monkeypatch, answers: Callable[[int], list[str]], name: str) -> list[str]:
    """getaddrinfo answering `name` with answers(n) for its nth lookup (a
    DNS server this test controls); the lookups made, in a list."""
    real, lookups = socket.getaddrinfo, []

    def getaddrinfo(host, port, *args, **kwargs):
        if host != name:
            return real(host, port, *args, **kwargs)
        lookups.append(host)
        return [
            (socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
            for address in answers(len(lookups))
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return lookups


def test_a_name_rebound_to_loopback_after_a_check_does_not_reach_it(monkeypatch, service):
    lookups = resolver(monkeypatch, lambda n: [PUBLIC] if n == 1 else ["127.0.0.1"], "rebind.example")
    # What a check of the name ahead of the request sees: a public address.
    ahead = socket.getaddrinfo("rebind.example", service.port)
    assert outbound.is_public_address(ahead[0][4][0])

    with pytest.raises(outbound.AddressRefused):
        fetch(f"http://rebind.example:{service.port}/")

    assert len(lookups) == 2  # the request looked the name up once, where it connects
    assert service.connections() == 0


def test_a_name_with_a_private_address_among_public_ones_is_refused_whole(monkeypatch, service):
    resolver(monkeypatch, lambda n: [PUBLIC, "127.0.0.1"], "mixed.example")

    with pytest.raises(outbound.AddressRefused):
        fetch(f"http://mixed.example:{service.port}/")

    assert service.connections() == 0


def test_a_connection_that_lands_on_a_private_peer_is_dropped_before_a_byte_is_sent(monkeypatch, service):
    resolver(monkeypatch, lambda n: [PUBLIC], "moved.example")
    connect = socket.socket.connect

    def translated(sock, address):  # a NAT that sends the public address to this machine
        return connect(sock, ("127.0.0.1", address[1]) if address[0] == PUBLIC else address)

    monkeypatch.setattr(socket.socket, "connect", translated)

    with pytest.raises(outbound.AddressRefused):
        fetch(f"http://moved.example:{service.port}/")

    assert service.connections() == 1 and service.received == [b""]  # connected, then closed unspoken


def test_no_proxy_is_taken_from_the_environment(monkeypatch, service):
    with InternalService() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")

        assert fetch(f"http://127.0.0.1:{service.port}/", private=True).status == 404

        assert (proxy.connections(), service.connections()) == (0, 1)


# --- servers that answer badly ----------------------------------------------------------------


def test_a_redirect_is_answered_not_followed(service):
    with RawServer(redirecting(f"http://127.0.0.1:{service.port}/steal")) as server:
        answer = fetch(server.url + "/", private=True)

    assert (answer.status, answer.headers["Location"]) == (302, f"http://127.0.0.1:{service.port}/steal")
    assert service.connections() == 0


def streaming(head: bytes, blocks: int, block: bytes = b"x" * MB):
    """An answer of `head` then `blocks` times `block`, never held whole."""

    def handler(conn, stop):
        read_request(conn)
        conn.sendall(head)
        for _ in range(blocks):
            if stop.is_set():
                return
            conn.sendall(block)

    return handler


def peak_while(call: Callable[[], object]) -> int:
    """The most memory Python held at once while `call` ran, in bytes."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        with pytest.raises(outbound.TooLarge, match="larger than 8 MB"):
            call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def test_a_200_mb_answer_is_cut_at_the_cap_holding_no_more():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"  # no length said
    with RawServer(streaming(head, 200)) as server:
        peak = peak_while(lambda: fetch(server.url + "/", private=True, max_bytes=8 * MB))

    assert peak < 8 * MB * 1.5, peak


def test_a_200_mb_answer_said_so_is_refused_before_its_body_is_read():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (200 * MB)
    with RawServer(streaming(head, 200)) as server:
        peak = peak_while(lambda: fetch(server.url + "/", private=True, max_bytes=8 * MB))

    assert peak < MB, peak


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """200 MB of zeros, gzipped (about 200 KB)."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as zipped:
        block = bytes(MB)
        for _ in range(200):
            zipped.write(block)
    return out.getvalue()


def test_a_gzip_bomb_is_cut_at_the_cap_counted_decoded(bomb):
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(bomb)
    with RawServer(streaming(head, 1, bomb)) as server:
        peak = peak_while(lambda: fetch(server.url + "/", private=True, max_bytes=8 * MB))

    assert len(bomb) < MB and peak < 8 * MB * 1.5, peak


def test_a_gzipped_answer_under_the_cap_is_read_whole():
    body = gzip.compress(b'{"data": [' + b"1," * 100_000 + b"1]}")
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(body)
    with RawServer(streaming(head, 1, body)) as server:
        answer = fetch(server.url + "/", private=True, max_bytes=MB)

    assert len(answer.json()["data"]) == 100_001


def cut_after(url: str, deadline: float, **options) -> float:
    started = time.monotonic()
    with pytest.raises(outbound.TooSlow, match=f"within {deadline:g} s"):
        fetch(url, deadline=deadline, private=True, **options)
    return time.monotonic() - started


def test_an_answer_whose_headers_drip_is_cut_at_the_deadline():
    with RawServer(dripping(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", every=2)) as server:
        took = cut_after(server.url + "/", 3)

    assert 2.9 < took < 4.5, took


@pytest.mark.parametrize(
    ("head", "body", "every", "deadline"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"x" * 100, 1, 3),
        # Its end is the connection's: what came before the cut must not pass for all of it.
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"[1" + b",1" * 100 + b"]", 0.5, 2),
    ],
    ids=["length-said", "till-closed"],
)
def test_an_answer_whose_body_drips_is_cut_at_the_deadline(head, body, every, deadline):
    with RawServer(dripping(body, every, head=head)) as server:
        took = cut_after(server.url + "/", deadline)

    assert deadline - 0.1 < took < deadline + 1.5, took


def test_a_tls_handshake_held_open_is_cut_at_the_deadline():
    with RawServer(lambda conn, stop: stop.wait(30)) as server:
        took = cut_after(f"https://127.0.0.1:{server.port}/", 2)

    assert 1.9 < took < 3.5, took


def test_a_name_that_takes_long_to_look_up_is_cut_at_the_deadline(monkeypatch):
    real = socket.getaddrinfo

    def slow(host, *args, **kwargs):
        if host == "slow.example":
            time.sleep(4)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)

    assert cut_after("http://slow.example/", 1) < 2


# --- TLS --------------------------------------------------------------------------------------


@pytest.fixture
def certificate(tmp_path) -> tuple[str, str]:
    """A self-signed certificate for the name localhost, and its key (paths)."""
    return self_signed(tmp_path)


def test_tls_is_verified_on_the_name_given_which_is_sent_as_sni(certificate):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    names: list[str | None] = []
    context.sni_callback = lambda sock, name, context: names.append(name)

    def handler(conn, stop):
        with context.wrap_socket(conn, server_side=True) as tls:
            read_request(tls)
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")

    with RawServer(handler) as server:
        trusting = guarded.session(private_addresses=True)
        trusting.verify = certificate[0]
        answer = fetch(f"https://localhost:{server.port}/", session=trusting)
        with pytest.raises(requests.exceptions.SSLError):  # the certificate is not the address's
            fetch(f"https://127.0.0.1:{server.port}/", session=trusting)
        with pytest.raises(requests.exceptions.SSLError):  # nor one of a known authority's
            fetch(f"https://localhost:{server.port}/", private=True)

    assert answer.json() == {} and names[0] == "localhost"

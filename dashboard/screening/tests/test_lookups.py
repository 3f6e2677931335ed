"""The lookups beside the lists (screening/lookups.py), against local
servers answering as the real services document: a Safe Browsing Lookup
API (v4 `threatMatches:find`: the key as a parameter, the client and the
threat entries in the body, `matches` in the answer, `{}` for none), and a
DNSBL zone on a local DNS server (127.0.1.2 for a listed domain,
NXDOMAIN otherwise, 127.255.255.254 when it refuses the resolver, as
Spamhaus's do)."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import dns.message
import dns.rcode
import dns.rrset
import pytest

from screening import lookups
from testing.factories import fresh

pytestmark = pytest.mark.django_db

KEY = "test-key-" + fresh()
ZONE = "dbl.test"


class SafeBrowsing(ThreadingHTTPServer):
    def __init__(self):
        self.asked: list[dict] = []
        super().__init__(("127.0.0.1", 0), self.Handler)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            parts = urlsplit(self.path)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.server.asked.append({"path": parts.path, "query": parse_qs(parts.query), "body": body})
            if parts.path != "/v4/threatMatches:find" or parse_qs(parts.query).get("key") != [KEY]:
                self.send_response(403)
                self.end_headers()
                return
            entries = body["threatInfo"]["threatEntries"]
            matches = [
                {
                    "threatType": "SOCIAL_ENGINEERING",
                    "platformType": "ANY_PLATFORM",
                    "threatEntryType": "URL",
                    "threat": {"url": entry["url"]},
                    "cacheDuration": "300s",
                }
                for entry in entries
                if "phish-sb" in entry["url"]
            ]
            answer = json.dumps({"matches": matches} if matches else {}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)


class Dnsbl(threading.Thread):
    """A DNS server on UDP loopback answering for ZONE."""

    def __init__(self, listed: set[str], refusing: set[str] = frozenset()):
        super().__init__(daemon=True)
        self.listed, self.refusing = listed, refusing
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.asked: list[str] = []

    def run(self):
        while True:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            query = dns.message.from_wire(data)
            response = dns.message.make_response(query)
            name = query.question[0].name.to_text().rstrip(".")
            self.asked.append(name)
            domain = name.removesuffix("." + ZONE)
            if domain in self.listed or domain in self.refusing:
                address = "127.0.1.2" if domain in self.listed else "127.255.255.254"
                response.answer.append(dns.rrset.from_text(name + ".", 60, "IN", "A", address))
            else:
                response.set_rcode(dns.rcode.NXDOMAIN)
            self.sock.sendto(response.to_wire(), peer)

    def stop(self):
        self.sock.close()


@pytest.fixture
def safe_browsing(settings):
    server = SafeBrowsing()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.SAFE_BROWSING_API_KEY = KEY
    settings.SAFE_BROWSING_URL = f"http://127.0.0.1:{server.server_address[1]}/v4/threatMatches:find"
    lookups.forget()
    yield server
    server.shutdown()
    lookups.forget()


@pytest.fixture
def dnsbl(settings):
    server = Dnsbl(listed={"bad-dbl.example"}, refusing={"refused.example"})
    server.start()
    settings.SCREEN_DNSBL_ZONES = [ZONE]
    settings.SCREEN_DNS_RESOLVER = f"127.0.0.1:{server.port}"
    lookups.forget()
    yield server
    server.stop()
    lookups.forget()


def test_safe_browsing_refuses_what_it_matches_asked_as_documented(api, safe_browsing):
    answer = api.post("/api/v1/links", {"url": "https://phish-sb.example/login"}, format="json")
    assert answer.status_code == 400
    assert answer.json()["url"] == [
        "https://phish-sb.example/login is listed by Google Safe Browsing (SOCIAL_ENGINEERING): "
        "links to it are not allowed here."
    ]
    asked = safe_browsing.asked[-1]["body"]
    assert asked["client"]["clientId"] == "slingshot"
    assert asked["threatInfo"]["threatEntryTypes"] == ["URL"]
    assert asked["threatInfo"]["threatEntries"] == [{"url": "https://phish-sb.example/login"}]
    assert api.post("/api/v1/links", {"url": "https://example.com/fine"}, format="json").status_code == 201
    # A rule's target is asked about too.
    body = {
        "url": "https://example.com/",
        "rules": [{"url": "https://phish-sb.example/app", "conditions": [{"type": "device", "value": "ios"}]}],
    }
    answer = api.post("/api/v1/links", body, format="json")
    assert answer.status_code == 400 and "Google Safe Browsing" in answer.json()["rules"][0]


def test_a_bulk_is_asked_about_in_one_request(api, safe_browsing):
    links = [{"url": f"https://example.com/{n}"} for n in range(3)] + [{"url": "https://phish-sb.example/x"}]
    results = api.post("/api/v1/links/bulk", {"links": links}, format="json").json()["results"]
    assert [r["status"] for r in results] == [201, 201, 201, 400]
    assert len(safe_browsing.asked) == 1 and len(safe_browsing.asked[0]["body"]["threatInfo"]["threatEntries"]) == 4


def test_a_dnsbl_refuses_a_listed_domain_and_its_subdomains(api, dnsbl):
    answer = api.post("/api/v1/links", {"url": "https://www.bad-dbl.example/"}, format="json")
    assert answer.status_code == 400
    assert answer.json()["url"] == [
        "bad-dbl.example is listed by dbl.test (127.0.1.2): links to it are not allowed here."
    ]
    assert "www.bad-dbl.example.dbl.test" in dnsbl.asked
    assert api.post("/api/v1/links", {"url": "https://good.example/"}, format="json").status_code == 201
    # A zone that refuses the resolver is no answer: let through.
    assert api.post("/api/v1/links", {"url": "https://refused.example/"}, format="json").status_code == 201


def test_a_lookup_that_fails_lets_the_link_through_and_says_so(api, settings, caplog):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    settings.SAFE_BROWSING_API_KEY = KEY
    settings.SAFE_BROWSING_URL = f"http://127.0.0.1:{port}/v4/threatMatches:find"
    settings.SCREEN_DNSBL_ZONES = [ZONE]
    settings.SCREEN_DNS_RESOLVER = f"127.0.0.1:{port}"
    settings.SCREEN_LOOKUP_TIMEOUT_MS = 300
    lookups.forget()
    try:
        answer = api.post("/api/v1/links", {"url": "https://phish-sb.bad-dbl.example/"}, format="json")
    finally:
        lookups.forget()
    assert answer.status_code == 201
    assert "Safe Browsing not asked" in caplog.text and "DNSBL dbl.test not asked" in caplog.text

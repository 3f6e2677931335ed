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
        self.listing = "phish-sb"  # what a URL it lists holds
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
                if self.server.listing in entry["url"]
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


def test_links_made_before_a_lookup_listed_them_are_flagged_by_the_next_lookup_and_cleared_by_a_later_one(
    user, settings
):
    """Safe Browsing starts listing a destination after its link was made:
    the next relookup_links flags it ("… (lookup)") and publishes it listed;
    a reading of the lists leaves that flag be; once Safe Browsing no longer
    lists it, the next relookup clears it."""
    import json as json_

    from django.core.management import call_command

    from links.flags import LOOKED_UP, flag_listed_links, relookup_links
    from links.publishing import link_payload
    from testing.factories import make_link

    link = make_link(owner=user, url="https://phish-sb-later.example/login")
    clean = make_link(owner=user, url="https://example.com/fine")
    server = SafeBrowsing()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.SAFE_BROWSING_API_KEY = KEY
    settings.SAFE_BROWSING_URL = f"http://127.0.0.1:{server.server_address[1]}/v4/threatMatches:find"
    try:
        assert relookup_links() == (1, 0)
        link.refresh_from_db()
        assert link.listed == (
            f"https://phish-sb-later.example/login: Google Safe Browsing (SOCIAL_ENGINEERING){LOOKED_UP}"
        )
        assert json_.loads(link_payload(link))["listed"] is True
        asked = [entry["url"] for request in server.asked for entry in request["body"]["threatInfo"]["threatEntries"]]
        assert sorted(asked) == sorted([link.url, clean.url])  # every active link, in one request
        assert flag_listed_links() == (0, 0)  # the lists do not clear a lookup's flag
        settings.SAFE_BROWSING_API_KEY = "another-key"  # the service answers 403: no answer
        assert relookup_links() == (0, 0)  # a failing lookup clears nothing it cannot confirm
        link.refresh_from_db()
        assert link.listed.endswith(LOOKED_UP)
        settings.SAFE_BROWSING_API_KEY = KEY
        server.listing = "nothing-listed-now"
        assert relookup_links() == (0, 1)
        link.refresh_from_db()
        assert link.listed == "" and "listed" not in json_.loads(link_payload(link))
    finally:
        server.shutdown()
        lookups.forget()
    settings.SAFE_BROWSING_API_KEY = ""
    assert relookup_links() == (0, 0)  # no lookup configured: nothing asked
    # screen_lists asks them again on its schedule.
    settings.SAFE_BROWSING_API_KEY = KEY
    server = SafeBrowsing()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.SAFE_BROWSING_URL = f"http://127.0.0.1:{server.server_address[1]}/v4/threatMatches:find"
    try:
        call_command("screen_lists", "--once")
        link.refresh_from_db()
        assert link.listed.endswith(LOOKED_UP)
    finally:
        server.shutdown()
        lookups.forget()

"""Redirect rules and A/B splits at the edge (edge/slingshot/rules.lua), in
a real nginx: each condition type (the address one from the addresses a
connection comes from), the first matching rule winning, and a
split over a few thousand distinct visitors."""

import http.client
import sys
import uuid
from collections import Counter
from pathlib import Path

from edge_helpers import link_id, publish, wait_for_clicks

from clicks.enrichment import Enricher

IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"
ANDROID = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36"
WINDOWS = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0"
MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 Safari/605.1.15"
LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
DEFAULT = "https://example.com/"


def rule(url: str, *conditions: dict) -> dict:
    return {"url": url, "conditions": list(conditions)}


def location(edge, path: str, **headers) -> str:
    response = edge.request(path, headers={name.replace("_", "-"): value for name, value in headers.items()})
    assert response.status == 302, response
    return response.headers["Location"]


def new_slug(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:8]


def test_device_rules(edge, rds):
    slug = new_slug("rd")
    publish(
        rds,
        slug,
        rules=[
            rule("https://ios.example/", {"type": "device", "value": "ios"}),
            rule("https://android.example/", {"type": "device", "value": "android"}),
            rule("https://windows.example/", {"type": "device", "value": "windows"}),
            rule("https://macos.example/", {"type": "device", "value": "macos"}),
            rule("https://linux.example/", {"type": "device", "value": "linux"}),
        ],
    )
    assert location(edge, f"/{slug}", User_Agent=IPHONE) == "https://ios.example/"
    assert location(edge, f"/{slug}", User_Agent=ANDROID) == "https://android.example/"
    assert location(edge, f"/{slug}", User_Agent=WINDOWS) == "https://windows.example/"
    assert location(edge, f"/{slug}", User_Agent=MAC) == "https://macos.example/"
    assert location(edge, f"/{slug}", User_Agent=LINUX) == "https://linux.example/"
    assert location(edge, f"/{slug}", User_Agent="curl/8.0") == DEFAULT
    assert location(edge, f"/{slug}") == DEFAULT

    classes = new_slug("rc")
    publish(
        rds,
        classes,
        rules=[
            rule("https://mobile.example/", {"type": "device", "value": "mobile"}),
            rule("https://desktop.example/", {"type": "device", "value": "desktop"}),
        ],
    )
    assert location(edge, f"/{classes}", User_Agent=ANDROID) == "https://mobile.example/"
    assert location(edge, f"/{classes}", User_Agent=IPHONE) == "https://mobile.example/"
    assert location(edge, f"/{classes}", User_Agent=MAC) == "https://desktop.example/"
    assert location(edge, f"/{classes}", User_Agent="curl/8.0") == DEFAULT


def test_language_rules_honour_q_values(edge, rds):
    slug = new_slug("rl")
    publish(
        rds,
        slug,
        rules=[
            rule("https://en-gb.example/", {"type": "language", "value": "en-GB"}),
            rule("https://de.example/", {"type": "language", "value": "de"}),
            rule("https://en.example/", {"type": "language", "value": "en"}),
        ],
    )
    assert location(edge, f"/{slug}", Accept_Language="en-GB,en;q=0.8") == "https://en-gb.example/"
    assert location(edge, f"/{slug}", Accept_Language="de-AT") == "https://de.example/"
    assert location(edge, f"/{slug}", Accept_Language="en-US,en;q=0.9") == "https://en.example/"
    # q=0 means "not this one"; the order of the rules decides among the rest.
    assert location(edge, f"/{slug}", Accept_Language="fr, de;q=0, en;q=0.1") == "https://en.example/"
    assert location(edge, f"/{slug}", Accept_Language="fr, en-gb;q=0") == DEFAULT
    assert location(edge, f"/{slug}") == DEFAULT


def test_query_rules_and_all_conditions_of_a_rule(edge, rds):
    slug = new_slug("rq")
    publish(
        rds,
        slug,
        forward_query=True,
        rules=[
            rule(
                "https://both.example/",
                {"type": "query", "key": "ref", "value": "mail"},
                {"type": "device", "value": "ios"},
            ),
            rule("https://mail.example/", {"type": "query", "key": "ref", "value": "mail"}),
            rule("https://beta.example/", {"type": "query", "key": "beta"}),
        ],
    )
    assert location(edge, f"/{slug}?ref=mail", User_Agent=IPHONE) == "https://both.example/?ref=mail"
    assert location(edge, f"/{slug}?ref=mail", User_Agent=MAC) == "https://mail.example/?ref=mail"
    assert location(edge, f"/{slug}?ref=web&beta") == "https://beta.example/?ref=web&beta"
    assert location(edge, f"/{slug}?beta=") == "https://beta.example/?beta="
    assert location(edge, f"/{slug}?ref=web") == DEFAULT + "?ref=web"


def test_a_split_shares_visitors_by_weight_and_keeps_each_on_one_side(edge, rds):
    slug = new_slug("ab")
    weights = {"https://a.example/": 60, "https://b.example/": 30, "https://c.example/": 10}
    publish(rds, slug, split=[{"url": url, "weight": weight} for url, weight in weights.items()])
    visitors = 3000
    conn = http.client.HTTPConnection("127.0.0.1", edge.port, timeout=10)
    seen = {}
    try:
        for n in list(range(visitors)) + list(range(0, visitors, 10)):  # every tenth one twice
            conn.request("GET", f"/{slug}", headers={"User-Agent": f"visitor {n}"})
            response = conn.getresponse()
            response.read()
            target = response.headers["Location"]
            assert seen.setdefault(n, target) == target, f"visitor {n} moved"
    finally:
        conn.close()
    counts = Counter(seen.values())
    for url, weight in weights.items():
        share = counts[url] / visitors
        assert abs(share - weight / 100) < 0.03, (url, share)


def test_rules_come_before_the_split(edge, rds):
    slug = new_slug("rs")
    publish(
        rds,
        slug,
        rules=[rule("https://ios.example/", {"type": "device", "value": "ios"})],
        split=[{"url": "https://a.example/", "weight": 1}, {"url": "https://b.example/", "weight": 1}],
    )
    assert location(edge, f"/{slug}", User_Agent=IPHONE) == "https://ios.example/"
    assert location(edge, f"/{slug}", User_Agent=MAC) in ("https://a.example/", "https://b.example/")


# Public addresses of two countries in the country database (data/geo).
GB, DE = "81.2.69.142", "217.160.0.1"


def test_a_country_rule_sees_the_visitor_address(edge, rds):
    slug = new_slug("rg")
    publish(rds, slug, rules=[rule("https://de.example/", {"type": "country", "value": "DE"})])
    assert location(edge, f"/{slug}", X_Forwarded_For=DE) == "https://de.example/"
    assert location(edge, f"/{slug}", X_Forwarded_For=GB) == DEFAULT
    assert location(edge, f"/{slug}") == DEFAULT  # 127.0.0.1: no country


def test_the_edge_and_the_importer_agree_on_the_country(edge, rds):
    """The same address gives the same code through the edge's country rules
    and through the importer's enrichment: they read one database."""
    addresses = [GB, DE, "8.8.8.8", "1.1.1.1", "193.0.6.139", "2a00:1450:4001::1", "200.160.2.3", "10.0.0.1"]
    enricher = Enricher()
    codes = {address: enricher.ip(address).country for address in addresses}
    assert {codes[GB], codes[DE]} == {"GB", "DE"}
    countries = sorted({code for code in codes.values() if code != "unknown"})
    slug = new_slug("ra")
    publish(
        rds, slug, rules=[rule(f"https://{c.lower()}.example/", {"type": "country", "value": c}) for c in countries]
    )
    for address, code in codes.items():
        expected = DEFAULT if code == "unknown" else f"https://{code.lower()}.example/"
        assert location(edge, f"/{slug}", X_Forwarded_For=address) == expected, address


def test_each_click_records_what_served_it(edge, rds):
    slug = new_slug("rk")
    publish(
        rds,
        slug,
        rules=[
            rule("https://mail.example/", {"type": "query", "key": "ref", "value": "mail"}),
            rule("https://ios.example/", {"type": "device", "value": "ios"}),
        ],
        split=[{"url": "https://a.example/", "weight": 1}, {"url": "https://b.example/", "weight": 1}],
    )
    assert location(edge, f"/{slug}?ref=mail") == "https://mail.example/"
    assert location(edge, f"/{slug}", User_Agent=IPHONE) == "https://ios.example/"
    split_target = location(edge, f"/{slug}", User_Agent=MAC)
    plain = new_slug("rp")
    publish(rds, plain)
    assert location(edge, f"/{plain}") == DEFAULT
    clicks = wait_for_clicks(rds, slug, 3)
    # Workers flush on their own: the clicks may come in any order.
    assert sorted(click.get("rule") for click in clicks) == ["1", "2", "ab1" if "a.example" in split_target else "ab2"]
    assert {click["link"] for click in clicks} == {str(link_id(slug))}
    (default,) = wait_for_clicks(rds, plain, 1)
    assert "rule" not in default


def location_from(edge, source: str, path: str, **headers) -> str:
    """Where the edge sends a visitor whose connection comes from `source`
    (a loopback address: the edge listens on 127.0.0.1)."""
    conn = http.client.HTTPConnection("127.0.0.1", edge.port, timeout=10, source_address=(source, 0))
    try:
        conn.request("GET", path, headers={name.replace("_", "-"): value for name, value in headers.items()})
        response = conn.getresponse()
        response.read()
        assert response.status == 302, response.status
        return response.headers["Location"]
    finally:
        conn.close()


def test_address_rules_see_the_address_the_click_records(edge, rds):
    slug = new_slug("ri")
    publish(
        rds,
        slug,
        rules=[
            rule("https://two.example/", {"type": "ip", "value": "127.0.0.2"}),
            rule("https://wild.example/", {"type": "ip", "value": "*.*.*.3"}),
            rule("https://range.example/", {"type": "ip", "value": "127.0.0.0/29"}),
            rule("https://v6.example/", {"type": "ip", "value": "2001:db8::/32"}),
        ],
    )
    assert location_from(edge, "127.0.0.2", f"/{slug}") == "https://two.example/"
    assert location_from(edge, "127.0.0.3", f"/{slug}") == "https://wild.example/"
    assert location_from(edge, "127.0.0.4", f"/{slug}") == "https://range.example/"
    assert location_from(edge, "127.0.0.9", f"/{slug}") == DEFAULT
    # Behind a proxy it trusts, the edge takes the address the proxy gives.
    assert location(edge, f"/{slug}", X_Forwarded_For="2001:db8:1::7") == "https://v6.example/"
    assert location(edge, f"/{slug}", X_Forwarded_For="2001:db9::7") == DEFAULT
    assert location(edge, f"/{slug}", X_Forwarded_For="198.51.100.3") == "https://wild.example/"
    clicks = wait_for_clicks(rds, slug, 7)
    assert sorted((click["ip"], click.get("rule")) for click in clicks) == [
        ("127.0.0.2", "1"),
        ("127.0.0.3", "2"),
        ("127.0.0.4", "3"),
        ("127.0.0.9", None),
        ("198.51.100.3", "2"),
        ("2001:db8:1::7", "4"),
        ("2001:db9::7", None),
    ]


EDGE = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86"
)
OPERA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36 OPR/116.0.0.0"
)
SAFARI_IOS = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_2 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/18.2 Mobile/15E148 Safari/604.1"
)
ANDROID_STOCK = (
    "Mozilla/5.0 (Linux; U; Android 4.0.3; ko-kr; LG-L160L Build/IML74K) AppleWebKit/534.30 "
    "(KHTML, like Gecko) Version/4.0 Mobile Safari/534.30"
)
SAMSUNG = (
    "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/27.0 Chrome/125.0.0.0 Mobile Safari/537.36"
)
CHROMEBOOK = (
    "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)


def test_browser_rules_and_chromeos(edge, rds):
    slug = new_slug("rb")
    browsers = ("edge", "opera", "android_browser", "safari", "firefox", "chrome")
    publish(rds, slug, rules=[rule(f"https://{b}.example/", {"type": "browser", "value": b}) for b in browsers])
    assert location(edge, f"/{slug}", User_Agent=EDGE) == "https://edge.example/"
    assert location(edge, f"/{slug}", User_Agent=OPERA) == "https://opera.example/"
    assert location(edge, f"/{slug}", User_Agent=ANDROID_STOCK) == "https://android_browser.example/"
    assert location(edge, f"/{slug}", User_Agent=SAFARI_IOS) == "https://safari.example/"
    assert location(edge, f"/{slug}", User_Agent=LINUX) == "https://firefox.example/"
    assert location(edge, f"/{slug}", User_Agent=ANDROID) == "https://chrome.example/"
    assert location(edge, f"/{slug}", User_Agent=SAMSUNG) == DEFAULT
    assert location(edge, f"/{slug}", User_Agent="curl/8.0") == DEFAULT
    assert location(edge, f"/{slug}") == DEFAULT

    os = new_slug("ro")
    publish(
        rds,
        os,
        rules=[
            rule("https://chromeos.example/", {"type": "device", "value": "chromeos"}),
            rule("https://linux.example/", {"type": "device", "value": "linux"}),
        ],
    )
    assert location(edge, f"/{os}", User_Agent=CHROMEBOOK) == "https://chromeos.example/"
    assert location(edge, f"/{os}", User_Agent=LINUX) == "https://linux.example/"


def test_date_rules_compare_the_request_time(edge, rds):
    slug = new_slug("rt")
    publish(
        rds,
        slug,
        rules=[
            rule("https://ended.example/", {"type": "before", "value": "2020-01-01T00:00:00Z"}),
            rule("https://coming.example/", {"type": "after", "value": "2999-01-01T00:00:00Z"}),
            rule(
                "https://now.example/",
                {"type": "after", "value": "2020-01-01T00:00:00Z"},
                {"type": "before", "value": "2999-01-01T00:00:00Z"},
            ),
        ],
    )
    assert location(edge, f"/{slug}") == "https://now.example/"
    ended = new_slug("re")
    publish(rds, ended, rules=[rule("https://ended.example/", {"type": "before", "value": "2020-01-01T00:00:00Z"})])
    assert location(edge, f"/{ended}") == DEFAULT


def test_the_benchmarks_rule_cases_serve_their_last_rule(edge, rds):
    """loadtest/bench_edge.py's cases (h) and (i) measure what they say: every
    rule tried, the last one matching wrk's request (its headers, from
    127.0.0.1)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "loadtest"))
    from bench_edge import CEILING_TARGET, FIVE_NEW_RULES, FIVE_RULES

    wrk = {
        "User_Agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/131.0.0.0 Safari/537.36",
        "Accept_Language": "en-US,en;q=0.9",
    }
    for rules in (FIVE_RULES, FIVE_NEW_RULES):
        slug = new_slug("bn")
        publish(rds, slug, rules=rules)
        assert location(edge, f"/{slug}", **wrk) == CEILING_TARGET
        (click,) = wait_for_clicks(rds, slug, 1)
        assert click["rule"] == "5"

"""Enrichment is pure logic over the parsers' own data: no database needed."""

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clicks.enrichment import Enricher, _ipv6, anonymise, device_class, hash64, referer_host, stored_user_agent

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
)
IPAD = (
    "Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/16.0 Mobile/15E148 Safari/604.1"
)
WINDOWS_CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


@pytest.fixture(scope="module")
def enricher() -> Enricher:
    return Enricher()


@pytest.mark.parametrize(
    "privacy, raw, stored, network",
    [
        ("anonymise", "203.0.113.77", "203.0.113.0", "203.0.113.0"),
        ("anonymise", "2001:db8:abcd:1234:5678::1", "2001:db8:abcd::", "2001:db8:abcd::"),
        ("anonymise", "::ffff:198.51.100.9", "198.51.100.0", "198.51.100.0"),
        ("full", "203.0.113.77", "203.0.113.77", "203.0.113.0"),
        ("full", "2001:db8:abcd:1234::1", "2001:db8:abcd:1234::1", "2001:db8:abcd::"),
        ("full", "::ffff:198.51.100.9", "198.51.100.9", "198.51.100.0"),
        ("none", "203.0.113.77", None, "203.0.113.0"),
        ("anonymise", "not an address", None, ""),
    ],
)
def test_ip_privacy(privacy, raw, stored, network):
    facts = Enricher(ip_privacy=privacy).ip(raw)
    assert (facts.stored, facts.network) == (stored, network)


def test_an_unknown_privacy_setting_is_refused():
    with pytest.raises(ValueError, match="ip_privacy"):
        Enricher(ip_privacy="partial")


def test_country_comes_from_the_country_database_and_degrades_to_unknown(enricher, tmp_path):
    assert enricher.ip("8.8.8.8").country == "US"
    assert enricher.ip("2001:4860:4860::8888").country == "US"
    assert enricher.ip("81.2.69.142").country == "GB"
    assert enricher.ip("10.1.2.3").country == "unknown"
    assert enricher.ip("").country == "unknown"
    assert Enricher(country_db=tmp_path / "missing.mmdb").ip("8.8.8.8").country == "unknown"


@pytest.mark.parametrize(
    "agent, browser, os_family, device, is_bot",
    [
        (IPHONE, "Mobile Safari", "iOS", "mobile", False),
        (IPAD, "Mobile Safari", "iOS", "tablet", False),
        (WINDOWS_CHROME, "Chrome", "Windows", "desktop", False),
        (GOOGLEBOT, "Googlebot", "unknown", "bot", True),
        ("curl/8.4.0", "curl", "unknown", "bot", True),
        ("", "unknown", "unknown", "unknown", False),
    ],
)
def test_user_agents_are_classified(enricher, agent, browser, os_family, device, is_bot):
    facts = enricher.agent(agent)
    assert (facts.user_agent, facts.browser, facts.os, facts.device, facts.is_bot) == (
        agent,
        browser,
        os_family,
        device,
        is_bot,
    )


def test_without_enrichment_everything_is_unknown_but_the_address_is_still_anonymised():
    plain = Enricher(enabled=False)
    facts = plain.agent(GOOGLEBOT)
    assert (facts.browser, facts.os, facts.device, facts.is_bot) == ("unknown", "unknown", "unknown", False)
    assert plain.referer("https://t.co/x").host == "unknown"
    assert plain.ip("203.0.113.77")[:3] == ("203.0.113.0", "unknown", "203.0.113.0")


@pytest.mark.parametrize(
    "referer, host",
    [
        ("", ""),
        ("https://News.Example.com:8443/a?b=c", "news.example.com"),
        ("android-app://com.slack/", "com.slack"),
        ("not a url", "unknown"),
        ("http://[::1", "unknown"),
    ],
)
def test_referer_host(referer, host):
    assert referer_host(referer) == host


def test_headers_are_cut_and_cleaned_as_stored(enricher):
    assert enricher.agent("a\tb\x00" + "x" * 600).user_agent == "a\tb" + "x" * 508  # cut to 512, then NUL removed
    assert stored_user_agent("a\x00b" + "\udcff" + "x" * 600) == "ab?" + "x" * 508
    assert enricher.referer("https://r.example/\x00" + "r" * 2000).referer == "https://r.example/" + "r" * 1005


def test_android_without_mobile_is_a_tablet():
    assert (
        device_class(
            user_agent="Mozilla/5.0 (Linux; Android 13; SM-X700)",
            os_family="Android",
            device_family="SM-X700",
            is_bot=False,
        )
        == "tablet"
    )


@pytest.mark.parametrize("raw", ["1.2.3", "1.2.3.256", "01.2.3.4", "1.2.3.4.5", "1.2.3.-4", "١.2.3.4", "1.2.3.4 "])
def test_malformed_ipv4_is_not_stored(raw):
    assert Enricher().ip(raw)[:3] == (None, "unknown", "")


def test_a_visitor_is_the_anonymised_network_and_the_agent(enricher):
    def visitor(ip, agent):
        return enricher.ip(ip).network_hash ^ enricher.agent(agent).agent_hash

    assert visitor("203.0.113.5", IPHONE) == visitor("203.0.113.77", IPHONE)
    assert visitor("203.0.113.5", IPHONE) == hash64("203.0.113.0", b"net") ^ hash64(IPHONE, b"agent")
    assert (
        len(
            {
                visitor("203.0.113.5", IPHONE),
                visitor("203.0.114.5", IPHONE),
                visitor("203.0.113.5", IPAD),
                visitor("", IPHONE),
                visitor("", ""),
            }
        )
        == 5
    )
    assert -(2**63) <= visitor("203.0.113.5", IPHONE) < 2**63


def by_ipaddress(raw: str) -> tuple[str, str]:
    """An IPv6 address's anonymised network and address as ipaddress makes them."""
    parsed = ipaddress.ip_address(raw)
    if parsed.version == 6 and parsed.ipv4_mapped:
        parsed = parsed.ipv4_mapped
    return anonymise(parsed), str(parsed)


# Hextets of an address: zeros often, so that runs of them (which "::" stands for) are common.
HEXTETS = st.lists(st.one_of(st.just(0), st.just(0xFFFF), st.integers(0, 0xFFFF)), min_size=8, max_size=8)


def written(hextets: list[int], form: int) -> str:
    """One of the ways an address may be written: compressed, exploded, in capitals, without leading zeros."""
    address = ipaddress.IPv6Address(sum(h << (16 * (7 - i)) for i, h in enumerate(hextets)))
    return [address.compressed, address.exploded, address.exploded.upper(), ":".join(f"{h:x}" for h in hextets)][form]


@settings(max_examples=3000, deadline=None)
@given(hextets=HEXTETS, form=st.integers(0, 3))
def test_an_ipv6_address_is_written_as_ipaddress_writes_it(hextets, form):
    raw = written(hextets, form)
    fast = _ipv6(raw)
    if fast is None:  # left to ipaddress: an IPv4 address in its last 32 bits
        assert not any(hextets[:5])
    else:
        assert fast == by_ipaddress(raw)
    facts = Enricher(ip_privacy="full").ip(raw)
    assert (facts.stored, facts.network) == by_ipaddress(raw)[::-1]
    assert facts.address == facts.stored  # the whole address, for a team that keeps it whole


@settings(max_examples=3000, deadline=None)
@given(raw=st.text(alphabet="0123456789abcdefABCDEF:.%g ", max_size=45))
def test_what_ipv6_takes_for_an_address_ipaddress_takes_for_the_same(raw):
    fast = _ipv6(raw)
    if fast is not None:
        assert fast == by_ipaddress(raw)


@pytest.mark.parametrize(
    "raw, network, address",
    [
        ("2001:DB8:0:0:1::1", "2001:db8::", "2001:db8::1:0:0:1"),
        ("2001:db8:abcd:12::", "2001:db8:abcd::", "2001:db8:abcd:12::"),
        ("::1", "::", "::1"),  # left to ipaddress
        ("::ffff:198.51.100.9", "198.51.100.0", "198.51.100.9"),  # left to ipaddress: mapped IPv4
        ("fe80::1%eth0", "fe80::", "fe80::1%eth0"),  # a zone: left to ipaddress
        ("64:ff9b::198.51.100.9", "64:ff9b::", "64:ff9b::c633:6409"),
    ],
)
def test_ipv6_forms(raw, network, address):
    facts = Enricher(ip_privacy="full").ip(raw)
    assert (facts.network, facts.stored) == (network, address)

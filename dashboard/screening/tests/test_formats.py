"""The list formats people publish blocklists in (screening/formats.py), read
from lines as those lists write them: a hosts file (StevenBlack's), a plain
domain list (hagezi's, OISD's), AdGuard/ABP rules, URLhaus's CSV and its
plain URL list."""

from screening.formats import canonical_url, digest, domain_of, parse


def holds(parsed, *, domains=(), urls=()) -> bool:
    return {digest(d) for d in domains} == parsed.domains.as_set() and {digest(u) for u in urls} == parsed.urls.as_set()


def test_a_hosts_file():
    parsed = parse(
        """# Title: StevenBlack/hosts
127.0.0.1 localhost
127.0.0.1 localhost.localdomain
255.255.255.255 broadcasthost
::1 localhost
0.0.0.0 0.0.0.0
0.0.0.0 ads.example.com
0.0.0.0 Tracker.Example.NET. # a comment after the name
127.0.0.1 a.phish.example b.phish.example
""".splitlines()
    )
    assert holds(parsed, domains={"ads.example.com", "tracker.example.net", "a.phish.example", "b.phish.example"})


def test_a_plain_domain_list_with_its_wildcards_and_an_idn():
    parsed = parse(["# hagezi", "phish.example", "*.malware.example", ".spam.example", "bücher.example", ""])
    assert holds(parsed, domains={"phish.example", "malware.example", "spam.example", "xn--bcher-kva.example"})


def test_adguard_and_adblock_plus_domain_rules():
    parsed = parse(
        [
            "[Adblock Plus 2.0]",
            "! Title: AdGuard DNS filter",
            "||phish.example^",
            "||track.example^$third-party",
            "||cdn.example/ads/*",  # a path: not a domain rule
            "@@||allowed.example^",  # an exception
            "example.org##.banner",  # a page's content
        ]
    )
    assert holds(parsed, domains={"phish.example", "track.example"}) and parsed.skipped == 3


def test_urlhaus_csv_and_plain_urls():
    parsed = parse(
        [
            "################################################################",
            "# abuse.ch URLhaus Database Dump (CSV - recent URLs only)",
            "# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter",
            '"3313540","2026-11-28 10:01:02","http://203.0.113.7:8080/bins/mozi.m","online","2026-11-28 10:01:02",'
            '"malware_download","elf,Mozi","https://urlhaus.abuse.ch/url/3313540/","lrz_urlhaus"',
            "HTTPS://Bad.Example:443/payload.exe#x",
        ]
    )
    assert holds(parsed, urls={"http://203.0.113.7:8080/bins/mozi.m", "https://bad.example/payload.exe"})


def test_an_address_list_and_lines_that_are_nothing():
    parsed = parse(["203.0.113.9", "2001:db8::1", "not a list line at all", "localhost"])
    assert holds(parsed, domains={"203.0.113.9", "[2001:db8::1]"}) and parsed.skipped == 2


def test_names_and_urls_compare_as_links_keep_them():
    assert domain_of("WWW.Example.COM.") == "www.example.com"
    assert domain_of("localhost") is None and domain_of("bad name.example") is None and domain_of("com") is None
    assert canonical_url("HTTP://Example.com:80") == "http://example.com/"
    assert canonical_url("ftp://example.com/") is None


def test_hashes_come_out_sorted_once_each():
    from array import array

    from screening.formats import Hashes

    hashes = Hashes()
    names = [f"host-{n}.example" for n in range(5000)]
    for name in names + names[:100]:
        hashes.add(name)
    values = array("Q")
    values.frombytes(hashes.packed())
    assert list(values) == sorted(digest(name) for name in names)

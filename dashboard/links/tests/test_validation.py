"""The one normaliser of target URLs (links.validation.normalise_target):
pure logic over settings, no database."""

import pytest
from django.core.exceptions import ValidationError

from links import validation
from links.validation import normalise_target


@pytest.fixture(autouse=True)
def edge_at(settings, monkeypatch):
    settings.EDGE_BASE_URL = "https://Go.Example.com:8443"
    # The other domains' hosts, as links.validation keeps them from the
    # Domain table: given here, kept for ever, so no query is made.
    monkeypatch.setattr(validation, "_domain_hosts", (float("inf"), frozenset({"to.example.org"})))
    settings.LINK_DOMAIN_BLOCKLIST = ["blocked.example"]
    settings.LINK_URL_MAX_LENGTH = 2048


@pytest.mark.parametrize(
    "typed, kept",
    [
        ("https://example.com/a?b=c#d", "https://example.com/a?b=c#d"),
        ("HTTPS://EXAMPLE.COM/Path", "https://example.com/Path"),
        ("  https://example.com/spaces-around\n", "https://example.com/spaces-around"),
        ("https://Bücher.example/straße?q=ä#café", "https://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%A4#caf%C3%A9"),
        ("https://例え.テスト/", "https://xn--r8jz45g.xn--zckzah/"),
        ("http://example.com:80/x", "http://example.com/x"),
        ("https://example.com:443/x", "https://example.com/x"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("http://example.com./x", "http://example.com/x"),
        ("http://134744072/", "http://8.8.8.8/"),
        ("http://0x08080808/", "http://8.8.8.8/"),
        ("http://[2001:DB8::1]:8080/", "http://[2001:db8::1]:8080/"),
        ("https://my_host.example/", "https://my_host.example/"),
        ('https://example.com/"quoted"<tag>', "https://example.com/%22quoted%22%3Ctag%3E"),
        ("https://example.com/already%20encoded", "https://example.com/already%20encoded"),
    ],
)
def test_targets_are_kept_in_one_ascii_spelling(typed, kept):
    assert normalise_target(typed) == kept
    assert normalise_target(kept) == kept
    assert kept.isascii()


@pytest.mark.parametrize(
    "target, code",
    [
        # Back to this machine or the edge, in any spelling and on any port.
        ("http://localhost:8080/x", "loop"),
        ("https://TO.example.org:8443/x", "loop"),
        ("http://LOCALHOST./x", "loop"),
        ("http://app.localhost/x", "loop"),
        ("http://127.0.0.1/x", "loop"),
        ("http://127.1:8080/x", "loop"),
        ("http://2130706433:8080/x", "loop"),
        ("http://0x7f000001:8080/x", "loop"),
        ("http://0177.0.0.1/x", "loop"),
        ("http://0.0.0.0/x", "loop"),
        ("http://[::1]:8080/x", "loop"),
        ("http://[::]/x", "loop"),
        ("http://[::ffff:127.0.0.1]:8080/x", "loop"),
        ("http://[0:0:0:0:0:ffff:7f00:1]/x", "loop"),
        ("https://go.example.com/x", "loop"),
        ("http://GO.EXAMPLE.COM.:9999/x", "loop"),
        ("https://gö.example.com/x", None),  # another host altogether: punycode, accepted
        # Credentials, which also hide where a link goes.
        ("http://go.example.com:8443@example.com/", "credentials"),
        ("https://user:secret@example.com/", "credentials"),
        # Ports.
        ("https://example.com:99999/", "port"),
        ("https://example.com:-1/", "port"),
        ("https://example.com:0/", "port"),
        ("https://example.com:８０/", "port"),
        ("https://example.com:http/", "port"),
        # Characters nobody sees or a header would split on.
        ("https://example.com/\u00a0nbsp", "unsafe"),
        ("https://example.com/\u0085", "unsafe"),
        ("https://example.com/\u2028", "unsafe"),
        ("https://example.com/\u202egnp.exe", "unsafe"),
        ("https://example.com/\ufeff", "unsafe"),
        ("https://exa\u200bmple.com/", "unsafe"),
        ("https://example.com/a\tb", "unsafe"),
        ("https://example.com/a\r\nSet-Cookie: x", "unsafe"),
        ("https://example.com/a b", "unsafe"),
        # Schemes and hosts.
        ("javascript:alert(1)", "scheme"),
        ("ftp://example.com/", "scheme"),
        ("//example.com/", "scheme"),
        ("http:///path", "no_host"),
        ("http://a..b/", "invalid_host"),
        ("http://-bad.example/", "invalid_host"),
        ("http://1.2.3.4.5/", "invalid_host"),
        ("http://[::1/", "invalid_host"),
        ("http://[fe80::1%25eth0]/", "invalid_host"),
        ("https://blocked.example/", "blocked"),
        ("https://www.Blocked.Example/", "blocked"),
        ("https://example.com/" + "a" * 2100, "too_long"),
    ],
)
def test_what_cannot_be_served_is_refused_with_its_reason(target, code):
    if code is None:
        assert normalise_target(target).isascii()
        return
    with pytest.raises(ValidationError) as refused:
        normalise_target(target)
    assert refused.value.code == code, refused.value.messages

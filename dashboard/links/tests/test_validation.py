"""The one normaliser of target URLs (links.validation.normalise_target):
logic over settings, and the screening lists it asks (the staff's bans
among them, kept in the database, so the database is there)."""

import pytest
from django.core.exceptions import ValidationError

from links import validation
from links.validation import normalise_target

pytestmark = pytest.mark.django_db


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


# Every character UTS #46 maps to nothing, by kind: what IDNA would drop from
# a host, leaving another host than the one typed.
IGNORED_BY_IDNA = ["\u3164", "\u115f", "\u1160", "\uffa0", "\ufe0f", "\U000e0100", "\u034f", "\u180b", "\u17b4"]


@pytest.mark.parametrize("char", IGNORED_BY_IDNA)
def test_a_host_with_a_character_idna_drops_is_refused_not_changed(char):
    for target in (f"https://exa{char}mple.com/", f"https://b{char}ücher.example/", f"https://{char}example.com/"):
        with pytest.raises(ValidationError) as refused:
            normalise_target(target)
        assert refused.value.code == "invisible"
        assert f"U+{ord(char):04X}" in refused.value.messages[0]
    with pytest.raises(ValidationError) as refused:
        validation.validate_domain_host(f"go{char}.example.org")
    assert refused.value.code == "invisible"


@pytest.mark.parametrize("char", IGNORED_BY_IDNA)
def test_the_same_character_in_the_path_or_query_is_percent_encoded(char):
    encoded = "".join(f"%{byte:02X}" for byte in char.encode())
    assert normalise_target(f"https://example.com/a{char}b?q={char}#{char}") == (
        f"https://example.com/a{encoded}b?q={encoded}#{encoded}"
    )


@pytest.mark.parametrize(
    "target",
    [
        "https://exa\ud800mple.com/",
        "https://example.com/a\udfffb",
        "https://example.com/?q=\udbff",
        "https://example.com/#\udc00",
        "\ud800https://example.com/",
        "https://[::1\ud800]/",
        "https://example.com:\ud800/",
    ],
)
def test_a_lone_surrogate_anywhere_is_refused_by_name(target):
    with pytest.raises(ValidationError) as refused:
        normalise_target(target)
    assert refused.value.code == "surrogate_characters_not_allowed"
    assert "U+D" in refused.value.messages[0]
    assert refused.value.messages[0].encode("utf-8")


def test_a_nul_is_refused_anywhere():
    for target in ("https://exa\x00mple.com/", "https://example.com/\x00"):
        with pytest.raises(ValidationError) as refused:
            normalise_target(target)
        assert refused.value.code == "null_characters_not_allowed"


@pytest.mark.parametrize("host", ["go\ud800.example.org", "go\x00.example.org", "\udc80"])
def test_a_domain_host_that_cannot_be_kept_is_refused(host):
    with pytest.raises(ValidationError) as refused:
        validation.validate_domain_host(host)
    assert refused.value.code in ("surrogate_characters_not_allowed", "null_characters_not_allowed")
    with pytest.raises(ValidationError):
        validation.domain_host(host)


@pytest.mark.parametrize("tag", ["sale\u3164", "\u115f", "a\ud800", "a\x00", "a\u200b"])
def test_tags_hold_nothing_invisible_or_unstorable(tag):
    with pytest.raises(ValidationError) as refused:
        validation.validate_tags(["ok", tag])
    assert refused.value.code == "invalid_tag"
    assert refused.value.messages[0].encode("utf-8")


def test_tags_in_any_script_are_kept():
    validation.validate_tags(["한국", "Bücher", "例え", "a.b-c_d"])


@pytest.mark.parametrize(
    "typed, suggested",
    [
        ("example.com/page", "https://example.com/page"),
        ("www.Example.com", "https://www.example.com"),
        ("example.com:8080/a?b=c", "https://example.com:8080/a?b=c"),
        ("ftp://example.com/page", None),  # a scheme of its own
        ("mailto:a@example.com", None),
        ("localhost/page", None),  # no dot: a name, not a domain
        ("go.example.com/x", None),  # the edge itself: no URL to suggest
    ],
)
def test_a_url_typed_without_its_scheme_gets_the_https_one_suggested(typed, suggested):
    with pytest.raises(ValidationError) as refused:
        normalise_target(typed)
    assert refused.value.code == "scheme"
    (message,) = refused.value.messages
    assert message.startswith("Only http and https URLs can be shortened")
    if suggested:
        assert message.endswith(f": did you mean {suggested}?")
    else:
        assert "did you mean" not in message


def test_words_are_told_they_are_not_a_url():
    with pytest.raises(ValidationError) as refused:
        normalise_target("example dot com")
    assert refused.value.code == "not_url"
    assert refused.value.messages[0].startswith("“example dot com” is not a URL")
    assert "control" not in refused.value.messages[0]

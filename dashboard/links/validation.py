"""Rules for what a link may hold. The edge trusts these (docs/contract.md):
a target that passes `normalise_target` is ASCII, has nothing a header could
be split on, and is served by the edge as it is.

Nothing typed is silently dropped: a host name holding a character IDNA
would map to nothing (slingshot.text.invisible) is refused rather than
stored without it, and text that cannot be encoded (slingshot.text.unstorable)
is refused before anything encodes it."""

import functools
import ipaddress
import re
import socket
import time
import unicodedata
from datetime import datetime, timedelta
from urllib.parse import quote, urlsplit, urlunsplit

import idna
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ValidationError

from screening.screen import listing_of
from slingshot.text import check_storable, describe, first_invisible, shown

REDIRECT_STATUSES = (301, 302, 307, 308)
# The largest UTC offset PostgreSQL's timestamptz takes.
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)
DEFAULT_PORTS = {"http": 80, "https": 443}


TAG_PATTERN = re.compile(r"[\w.-]{1,50}")


def validate_tags(value: list[str]) -> None:
    for tag in value:
        if char := isinstance(tag, str) and first_invisible(tag):  # a Hangul filler is a letter to \w
            raise ValidationError(
                "Tags are 1 to 50 letters, digits, '.', '-' or '_': %(tag)r holds %(char)s, which cannot be seen.",
                code="invalid_tag",
                params={"tag": tag, "char": describe(char)},
            )
        if not isinstance(tag, str) or not TAG_PATTERN.fullmatch(tag):
            raise ValidationError(
                "Tags are 1 to 50 letters, digits, '.', '-' or '_': %(tag)r is not.",
                code="invalid_tag",
                params={"tag": tag},
            )


def _refuse(message: str, code: str, **params) -> ValidationError:
    return ValidationError(message, code=code, params=params or None)


def _visible(value: str) -> bool:
    """No control, format (bidi overrides, zero-width characters, BOM), line,
    paragraph or space separator characters anywhere."""
    return not any(unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Zs") for char in value)


# RFC 3986: what may stay as it is in each part; anything else (non-ASCII
# characters, quotes, angle brackets...) is percent-encoded as UTF-8.
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"
_QUERY_SAFE = _PATH_SAFE + "?"
_NUMERIC_HOST = re.compile(r"[0-9a-fx.]+")
_HOST_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")


def _ascii_host(host: str) -> str:
    """The host in lower case, IDN labels as punycode (IDNA 2008 with UTS 46)."""
    host = host.rstrip(".")
    if not host:
        raise _refuse("The URL needs a host name.", "no_host")
    if host.isascii():
        host = host.lower()
        labels = host.split(".")
        if len(host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in labels):
            raise _refuse("%(host)s is not a valid host name.", "invalid_host", host=host)
        return host
    if char := first_invisible(host):  # which IDNA would drop, leaving another host than the one typed
        raise _refuse(
            "The host name holds %(char)s, a character that cannot be seen: type the host without it.",
            "invisible",
            char=describe(char),
        )
    try:
        return idna.encode(host, uts46=True, transitional=False).decode("ascii")
    except idna.IDNAError as exc:
        raise _refuse("%(host)s is not a valid host name: %(reason)s.", "invalid_host", host=host, reason=exc) from None


def _ip_of(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host names in any spelling browsers accept (`127.1`,
    `2130706433`, `0x7f000001`, `[::ffff:127.0.0.1]`), or None for a name."""
    if host.startswith("["):
        try:
            address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            address = None
        if address is None or address.scope_id:  # a zone only means something on the host that wrote it
            raise _refuse("%(host)s is not a valid IPv6 address.", "invalid_host", host=host)
        return address
    last = host.rsplit(".", 1)[-1]
    if _NUMERIC_HOST.fullmatch(host) and (last.isdigit() or last.startswith("0x")):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            raise _refuse("%(host)s is not a valid IPv4 address.", "invalid_host", host=host) from None
    return None


def _points_back(host: str, address) -> bool:
    """Whether the host is this machine or the edge itself, whatever the port."""
    if address is not None:
        mapped = getattr(address, "ipv4_mapped", None) or address
        return mapped.is_loopback or mapped.is_unspecified
    return host == "localhost" or host.endswith(".localhost") or host in edge_hosts()


def _host_and_port(netloc: str) -> tuple[str, int | None]:
    if netloc.startswith("["):
        end = netloc.find("]") + 1
        if not end:
            raise _refuse("The URL's host is not valid.", "invalid_host")
        host, rest = netloc[:end], netloc[end:]
    else:
        host, colon, port = netloc.partition(":")
        rest = colon + port
    if rest in ("", ":"):
        return host, None
    digits = rest[1:]
    if rest[0] != ":" or not (digits.isascii() and digits.isdigit()) or not 1 <= int(digits) <= 65535:
        raise _refuse("The URL's port is not a number from 1 to 65535.", "port")
    return host, int(digits)


def default_host() -> str:
    """The default domain's host: EDGE_BASE_URL's, as normalise_target writes hosts."""
    return _host_of(settings.EDGE_BASE_URL)


@functools.lru_cache(maxsize=8)  # asked for by every link shown (Link.short_url, Link.domain_query)
def _host_of(base_url: str) -> str:
    host = urlsplit(base_url).hostname or ""
    try:
        return _ascii_host(host)
    except ValidationError:
        return host.lower()


def validate_domain_host(value: str) -> str:
    """A domain's host as kept: lower case, IDN labels as punycode, no
    trailing dot; a name, not an address, and without a port. Returns it, or
    raises ValidationError."""
    if isinstance(value, str):
        check_storable(value)
    if not isinstance(value, str) or not _visible(value) or any(c in value for c in ":/?#@[]"):
        raise _refuse("Enter a host name such as go.example.com, without a scheme, port or path.", "invalid_host")
    host = _ascii_host(value.strip()).rstrip(".")
    if _ip_of(host) is not None:
        raise _refuse("Use a host name, not an IP address.", "invalid_host")
    if host == "localhost" or host.endswith(".localhost"):
        base = urlsplit(settings.EDGE_BASE_URL)
        raise _refuse(
            "%(host)s is this machine, which visitors elsewhere cannot reach. To try a second domain on this "
            "machine, add a name such as go.test, point it at 127.0.0.1 in /etc/hosts, and open "
            "%(scheme)s://go.test%(port)s/<slug>.",
            "loop",
            host=host,
            scheme=base.scheme or "http",
            port=f":{base.port}" if base.port else "",
        )
    return host


def domain_host(value: str | None) -> str:
    """The host of a domain as kept, from one as people write it (any case,
    IDN or punycode, a trailing dot); the default domain's for None or "",
    and for its own host, which may be an address (a local EDGE_BASE_URL).
    Raises ValidationError for what cannot be a domain's host."""
    if not value:
        return default_host()
    if value.lower().rstrip(".") == default_host():
        return default_host()
    return validate_domain_host(value)


# The hosts of the domains, which a process keeps for a few seconds: every
# target is checked against them (normalise_target), CSV imports and the
# publisher thousands at a time. links.domains clears it when it changes one.
_DOMAIN_HOSTS_TTL = 5.0
_domain_hosts: tuple[float, frozenset[str]] = (float("-inf"), frozenset())


def forget_domain_hosts() -> None:
    global _domain_hosts
    _domain_hosts = (float("-inf"), frozenset())


def edge_hosts() -> set[str]:
    """The host names the edge answers on: the default domain's
    (EDGE_BASE_URL) and every domain's, as normalise_target writes hosts."""
    global _domain_hosts
    read_at, hosts = _domain_hosts
    if time.monotonic() - read_at > _DOMAIN_HOSTS_TTL:
        # By the app registry: links.models imports this module for the fields' validators.
        domains = apps.get_model("links", "Domain").objects
        hosts = frozenset(domains.values_list("host", flat=True))
        _domain_hosts = (time.monotonic(), hosts)
    return {default_host(), *hosts}


def _check_visible(value: str) -> None:
    if _visible(value):
        return
    if "://" not in value and " " in value:  # words, such as "example dot com"
        raise _refuse(
            "“%(value)s” is not a URL: a URL has no spaces, and begins with https:// or http://, "
            "such as https://example.com/page.",
            "not_url",
            value=shown(value[:60]),
        )
    raise _refuse(
        "The URL must not contain spaces or control characters, nor invisible or direction-changing ones.", "unsafe"
    )


def _check_scheme(scheme: str, value: str) -> None:
    if scheme in DEFAULT_PORTS:
        return
    suggestion = _with_scheme(value)
    if suggestion:
        raise _refuse(
            "Only http and https URLs can be shortened: did you mean %(suggestion)s?",
            "scheme",
            suggestion=suggestion,
        )
    raise _refuse("Only http and https URLs can be shortened.", "scheme")


def normalise_target(value: str) -> str:
    """The target URL as the link keeps it and the edge sends it, or a
    ValidationError saying what is wrong with it.

    Surrounding spaces go; the scheme and host are lower-cased, an IDN host
    becomes punycode, an IPv4 address in any spelling becomes dotted, a
    default port goes, and non-ASCII characters of the path, query and
    fragment are percent-encoded, so the result is ASCII. Refused: schemes
    other than http and https, credentials, invalid ports, control, bidi and
    invisible characters, hosts that are this machine or the edge itself in
    any spelling and with any port (a redirect loop), blocklisted domains,
    URLs longer than LINK_URL_MAX_LENGTH, and destinations on the lists
    of SCREEN_LISTS (screening/). The other characters that
    cannot be seen (slingshot.text.invisible: Hangul fillers, variation
    selectors) are refused in the host, where IDNA would drop them, and
    percent-encoded in the path, query and fragment like any non-ASCII
    character; NUL and lone surrogates are refused anywhere."""
    if not isinstance(value, str):
        raise _refuse("Enter a URL.", "invalid")
    check_storable(value)
    value = value.strip(" \t\r\n")
    _check_visible(value)
    try:
        parts = urlsplit(value)
    except ValueError:
        raise _refuse("The URL's host is not valid.", "invalid_host") from None
    scheme = parts.scheme.lower()
    _check_scheme(scheme, value)
    if "@" in parts.netloc:
        raise _refuse("The URL must not carry a user name or password.", "credentials")
    raw_host, port = _host_and_port(parts.netloc)
    host = raw_host if raw_host.startswith("[") else _ascii_host(raw_host)
    address = _ip_of(host)
    if isinstance(address, ipaddress.IPv4Address):
        host = str(address)
    elif address is not None:
        host = f"[{address.compressed}]"
    if _points_back(host, address):
        raise _refuse("A link cannot point back to this shortener or this machine.", "loop")
    blocked = _blocked_domain(host, settings.LINK_DOMAIN_BLOCKLIST)
    if blocked:
        raise _refuse("Links to %(domain)s are not allowed here.", "blocked", domain=blocked)
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    normalised = urlunsplit(
        (
            scheme,
            netloc,
            quote(parts.path, safe=_PATH_SAFE),
            quote(parts.query, safe=_QUERY_SAFE),
            quote(parts.fragment, safe=_QUERY_SAFE),
        )
    )
    limit = settings.LINK_URL_MAX_LENGTH
    if len(normalised) > limit:
        raise _refuse("The URL is longer than %(limit)d characters.", "too_long", limit=limit)
    if listing := listing_of(host, normalised):
        raise _refuse(
            "%(matched)s is on the blocklist %(list)s: links to it are not allowed here.",
            "listed",
            matched=listing.matched,
            list=listing.list_name,
        )
    return normalised


def _with_scheme(value: str) -> str | None:
    """What a URL typed without its scheme (example.com/page) means, as
    https, when that is a URL that could be shortened; None otherwise."""
    if "://" in value or value.startswith("/"):
        return None
    host = value.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "." not in host.rsplit(":", 1)[0]:
        return None
    try:
        return normalise_target("https://" + value)
    except ValidationError:
        return None


def split_host(url: str) -> str:
    """The host of a kept target, as normalise_target writes hosts (an IPv6
    address in brackets)."""
    try:
        netloc = urlsplit(url).netloc.rsplit("@", 1)[-1]
    except ValueError:
        return ""
    if netloc.startswith("["):
        return netloc[: netloc.find("]") + 1]
    return netloc.rsplit(":", 1)[0].lower()


def validate_target_url(value: str) -> None:
    normalise_target(value)


def _blocked_domain(host: str, blocklist: list[str]) -> str | None:
    """The blocklisted domain that host is, or is a subdomain of."""
    for domain in blocklist:
        domain = domain.strip(".").lower()
        if domain and (host == domain or host.endswith("." + domain)):
            return domain
    return None


def storable_offset(moment: datetime) -> bool:
    """Whether PostgreSQL takes this time's UTC offset (naive times have none)."""
    offset = moment.utcoffset()
    return offset is None or abs(offset) <= MAX_UTC_OFFSET

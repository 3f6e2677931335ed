"""A strict reading of a URL someone gave: http or https; no userinfo, no
backslash, no whitespace or control character, a host that is a plain
name, a dotted-quad IPv4 or a bracketed IPv6 (no other spelling of a
number), a port of digits; and Python's `urlsplit` and urllib3's
`parse_url` (what requests connects with) must read the same scheme, host
and port, so that no check can read one host while the client reaches
another. It needs no HTTP client.
"""

import ipaddress
import unicodedata
from urllib.parse import urlsplit

from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from .errors import UrlRefused

_LABEL = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def check_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http or https URL; UrlRefused, saying
    what is wrong, for anything two parsers could read differently or that
    spells an address in a form other than the usual one."""
    shown = quoted(url)
    if not isinstance(url, str) or not url:
        raise UrlRefused("An address is needed.")
    if any(char.isspace() or unicodedata.category(char).startswith("C") for char in url):
        raise UrlRefused(f"The address {shown} holds a space or a control character.")
    if "\\" in url:
        raise UrlRefused(f"The address {shown} holds a backslash, which clients read in different ways.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"The address {shown} cannot be read ({exc}).") from None
    if parts.scheme not in ("http", "https") or not url.lower().startswith(parts.scheme + "://"):
        raise UrlRefused(f"The address {shown} is not an http or https one.")
    netloc = parts.netloc
    if "@" in netloc:
        raise UrlRefused(f"The address {shown} holds a user name or password (before an @): give it without.")
    if "%" in netloc:
        raise UrlRefused(f"The address {shown} has a percent-encoded host or an IPv6 zone: give the host as it is.")
    if not netloc.isascii():
        raise UrlRefused(f"The address {shown} has a host that is not ASCII: give an international name as xn--....")
    if netloc.endswith(":") or (port is not None and not 0 < port < 65536):
        raise UrlRefused(f"The address {shown} has an empty or impossible port.")
    host = _checked_host(parts.hostname or "", shown)
    try:
        theirs = parse_url(url)
    except LocationParseError as exc:
        raise UrlRefused(f"The address {shown} cannot be read ({exc}).") from None
    if ((theirs.scheme or "").lower(), (theirs.host or "").lower().strip("[]"), theirs.port) != (
        parts.scheme,
        host,
        port,
    ):
        raise UrlRefused(f"The address {shown} is read differently by different clients.")
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80)


def _checked_host(host: str, shown: str) -> str:
    """The host of a URL (urlsplit's, lower case, without brackets) if it is
    a name, a dotted-quad IPv4 or an IPv6 address without a zone."""
    if not host:
        raise UrlRefused(f"The address {shown} has no host.")
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise UrlRefused(f"The address {shown} has a host that is not an IPv6 address.") from None
        return host
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    last = labels[-1]
    if last.isdigit() or last.startswith("0x"):
        # What WHATWG URL parsers and getaddrinfo read as a number: only the
        # usual four decimal parts (127.1, 0x7f.1, 2130706433, 0177.0.0.1
        # are all 127.0.0.1 to some and a name to others).
        try:
            if str(ipaddress.IPv4Address(host)) == host:
                return host
        except ValueError:
            pass
        raise UrlRefused(f"The address {shown} spells an IPv4 address in an unusual form: write it as a.b.c.d.")
    if len(host) > 254 or not all(_name_label(label) for label in labels):
        raise UrlRefused(f"The address {shown} has a host that is not a valid name.")
    return host


def _name_label(label: str) -> bool:
    return 0 < len(label) < 64 and set(label) <= _LABEL and not label.startswith("-") and not label.endswith("-")


def quoted(url: object) -> str:
    """The URL as a message may quote it: control characters and spaces
    escaped, cut to 200 characters."""
    if not isinstance(url, str):
        return repr(url)
    text = "".join(
        repr(char)[1:-1] if char.isspace() or unicodedata.category(char).startswith("C") else char for char in url
    )
    return f"'{text[:200]}{'…' if len(text) > 200 else ''}'"

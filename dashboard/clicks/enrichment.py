"""What the importer learns about a click: browser, OS, device class and bot
flag from its User-Agent, the referrer's host, the country of its address,
and the address as CLICK_IP_PRIVACY allows it to be kept.

Each answer is cached by the raw string it comes from: user agents,
referrers and addresses repeat heavily. Facts only; how a click is stored is
the batch's business (batch.py).
"""

import ipaddress
import logging
import os
import socket
from functools import lru_cache
from hashlib import blake2b
from typing import NamedTuple
from urllib.parse import urlsplit

import maxminddb
from crawlerdetect import CrawlerDetect
from django.conf import settings
from ua_parser import parse as parse_user_agent

log = logging.getLogger(__name__)

UNKNOWN = "unknown"
UA_MAX = 512
REFERER_MAX = 1024
CACHE_SIZE = 65536

IP_PRIVACY_CHOICES = ("anonymise", "full", "none")
# Each choice's number in the rows batch.py makes of an address (its binary
# COPY field for each choice, in this order): a team's choice, per link.
IP_STORAGE_CODES = {choice: code for code, choice in enumerate(IP_PRIVACY_CHOICES)}
# Bits kept of an anonymised address: IPv4 loses its last octet, IPv6 its last 80 bits.
ANONYMISED_PREFIX = {4: 24, 6: 48}

MOBILE_OS = {"iOS", "Android", "Windows Phone", "BlackBerry OS", "KaiOS", "Symbian OS", "Firefox OS"}
TABLET_HINTS = ("ipad", "tablet", "kindle", "silk/", "playbook")
DESKTOP_OS = {"Windows", "Mac OS X", "Linux", "Ubuntu", "Chrome OS", "Fedora", "FreeBSD", "Debian"}


class IpFacts(NamedTuple):
    stored: str | None  # what CLICK_IP_PRIVACY keeps of the address; None: nothing
    country: str  # ISO 3166 alpha-2, or 'unknown'
    network: str  # the anonymised network; '' for a missing or malformed address
    network_hash: int  # half of the visitor (docs/rollups.md)
    address: str | None = None  # the whole address; None for a missing or malformed one


class AgentFacts(NamedTuple):
    user_agent: str  # as stored: cut to UA_MAX, without NUL or lone surrogates
    browser: str
    os: str
    device: str  # desktop, mobile, tablet, bot, unknown
    is_bot: bool
    agent_hash: int  # the user agent's id (user_agents.id) and the other half of the visitor


class RefererFacts(NamedTuple):
    referer: str  # as stored: cut to REFERER_MAX, without NUL
    host: str  # lower-case host; '' for no Referer, 'unknown' for one without a host


def hash64(value: str, key: bytes) -> int:
    """A signed 64-bit hash (a PostgreSQL bigint), stable across processes and hosts."""
    return int.from_bytes(
        blake2b(value.encode("utf-8", "replace"), digest_size=8, key=key).digest(), "little", signed=True
    )


def anonymise(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    network = ipaddress.ip_network(f"{address}/{ANONYMISED_PREFIX[address.version]}", strict=False)
    return str(network.network_address)


def _ipv4_network(raw: str) -> str | None:
    """The anonymised /24 of a dotted-quad IPv4 address, or None if raw is not one."""
    parts = raw.split(".")
    if len(parts) != 4:
        return None
    for part in parts:
        if (
            not (part.isdigit() and part.isascii() and len(part) <= 3)
            or int(part) > 255
            or (part[0] == "0" and part != "0")
        ):
            return None
    return f"{parts[0]}.{parts[1]}.{parts[2]}.0"


def _ipv6(raw: str) -> tuple[str, str] | None:
    """The anonymised /48 and the address of an IPv6 address, as ipaddress
    writes them, or None if raw is not one or has an IPv4 address in its
    last 32 bits: inet_ntop writes what ipaddress does (RFC 5952), but for
    those forms (its first 80 bits zero), left to ipaddress, which takes
    several times as long over an address."""
    try:
        packed = socket.inet_pton(socket.AF_INET6, raw)
    except (OSError, ValueError):  # not an address; ValueError: a NUL in it
        return None
    if not any(packed[:10]):
        return None
    kept = ANONYMISED_PREFIX[6] // 8
    return socket.inet_ntop(socket.AF_INET6, packed[:kept] + bytes(16 - kept)), socket.inet_ntop(
        socket.AF_INET6, packed
    )


def stored_user_agent(raw: str) -> str:
    """A User-Agent header as stored: cut to UA_MAX characters, without NUL
    (which PostgreSQL's text refuses) or lone surrogates (not UTF-8)."""
    return raw[:UA_MAX].replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def referer_host(referer: str) -> str:
    if not referer:
        return ""
    try:
        host = urlsplit(referer).hostname
    except ValueError:
        return UNKNOWN
    return host or UNKNOWN


def device_class(*, user_agent: str, os_family: str, device_family: str, is_bot: bool) -> str:
    if is_bot or device_family == "Spider":
        return "bot"
    lowered = user_agent.lower()
    if any(hint in lowered for hint in TABLET_HINTS) or (os_family == "Android" and "mobile" not in lowered):
        return "tablet"
    if os_family in MOBILE_OS or "mobile" in lowered:
        return "mobile"
    if os_family in DESKTOP_OS:
        return "desktop"
    return UNKNOWN


def _open_country_db(path) -> maxminddb.Reader | None:
    try:
        return maxminddb.open_database(os.fspath(path), maxminddb.MODE_MMAP_EXT)
    except (OSError, ValueError, maxminddb.InvalidDatabaseError) as exc:
        log.warning("no country database at %s (bin/setup installs it): every country is unknown: %s", path, exc)
        return None


class Enricher:
    """`ip`, `agent` and `referer` answer IpFacts, AgentFacts and
    RefererFacts for a click's raw values, cached.

    `enabled=False` skips the parsers (every class is 'unknown'); the address
    is still checked and kept as `ip_privacy` says (IpFacts.stored; the
    whole one and the network are there for a team that chooses otherwise). The country comes from
    `country_db` (default GEOIP_COUNTRY_DB), the database the edge's country
    rules read too, so that a click's country is the one its rule saw.
    """

    def __init__(
        self,
        *,
        ip_privacy: str = "anonymise",
        enabled: bool = True,
        cache_size: int = CACHE_SIZE,
        country_db: str | os.PathLike | None = None,
    ):
        if ip_privacy not in IP_PRIVACY_CHOICES:
            raise ValueError(f"ip_privacy must be one of {IP_PRIVACY_CHOICES}, not {ip_privacy!r}")
        self.ip_privacy = ip_privacy
        self.enabled = enabled
        self._geo = _open_country_db(country_db or settings.GEOIP_COUNTRY_DB) if enabled else None
        self._crawlers = CrawlerDetect() if enabled else None
        self.ip = lru_cache(maxsize=cache_size)(self._ip)
        self.agent = lru_cache(maxsize=cache_size)(self._agent)
        self.referer = lru_cache(maxsize=cache_size)(self._referer)
        self._country = lru_cache(maxsize=cache_size)(self._lookup_country)

    def _ip(self, raw: str) -> IpFacts:
        network = _ipv4_network(raw)
        if network is not None:  # the common case, without ipaddress's cost
            address = raw
        elif ipv6 := _ipv6(raw):
            network, address = ipv6
        else:
            try:
                parsed = ipaddress.ip_address(raw)
            except ValueError:
                return IpFacts(None, UNKNOWN, "", hash64("", b"net"))
            if parsed.version == 6 and parsed.ipv4_mapped:
                parsed = parsed.ipv4_mapped
            network, address = anonymise(parsed), str(parsed)
        stored = {"anonymise": network, "full": address, "none": None}[self.ip_privacy]
        return IpFacts(stored, self._country(address), network, hash64(network, b"net"), address)

    def _lookup_country(self, address: str) -> str:
        """Country of the whole address, as the edge looks it up."""
        if self._geo is None:
            return UNKNOWN
        try:
            record = self._geo.get(address)
        except ValueError:  # a data problem in the database must not cost the click
            return UNKNOWN
        code = record.get("country_code") if isinstance(record, dict) else None
        return code if isinstance(code, str) and len(code) == 2 and code.isalpha() else UNKNOWN

    def _agent(self, raw: str) -> AgentFacts:
        user_agent = stored_user_agent(raw)
        browser = os_family = device = UNKNOWN
        is_bot = False
        if self.enabled and user_agent:
            result = parse_user_agent(user_agent)
            is_bot = bool(self._crawlers.isCrawler(user_agent))
            browser = result.user_agent.family if result.user_agent else UNKNOWN
            os_family = result.os.family if result.os else UNKNOWN
            device = device_class(
                user_agent=user_agent,
                os_family=os_family,
                device_family=result.device.family if result.device else "",
                is_bot=is_bot,
            )
            is_bot = is_bot or device == "bot"
            browser, os_family = (UNKNOWN if v == "Other" else v for v in (browser, os_family))
        return AgentFacts(user_agent, browser, os_family, device, is_bot, hash64(user_agent, b"agent"))

    def _referer(self, raw: str) -> RefererFacts:
        referer = raw[:REFERER_MAX].replace("\x00", "")
        return RefererFacts(referer, referer_host(referer) if self.enabled else UNKNOWN)

"""What the importer adds to a click: browser, OS, device class, bot flag,
referrer host, country, and the address as the privacy setting allows.

Each answer is cached by the raw string it comes from (user agents,
referrers and addresses repeat heavily), and is returned already formatted
as tab-separated COPY text, so a click costs the importer a few dict look-ups.

A visitor (docs/rollups.md) is the anonymised network and the user agent:
each fact carries a 64-bit hash of its half, and the importer XORs the two
(the halves are hashed with different keys, so the result is as good as a
hash of the pair).
"""
import ipaddress
from functools import lru_cache
from hashlib import blake2b
from typing import NamedTuple
from urllib.parse import urlsplit

from crawlerdetect import CrawlerDetect
from geoip2fast import GeoIP2Fast
from ua_parser import parse as parse_user_agent

UNKNOWN = "unknown"
UA_MAX = 512
REFERER_MAX = 1024
CACHE_SIZE = 65536

IP_PRIVACY_CHOICES = ("anonymise", "full", "none")
# Bits kept of an anonymised address: IPv4 loses its last octet, IPv6 its last 80 bits.
ANONYMISED_PREFIX = {4: 24, 6: 48}

MOBILE_OS = {"iOS", "Android", "Windows Phone", "BlackBerry OS", "KaiOS", "Symbian OS", "Firefox OS"}
TABLET_HINTS = ("ipad", "tablet", "kindle", "silk/", "playbook")
DESKTOP_OS = {"Windows", "Mac OS X", "Linux", "Ubuntu", "Chrome OS", "Fedora", "FreeBSD", "Debian"}


class IpFacts(NamedTuple):
    text: str  # COPY text of ip, country
    country: str
    visitor_net: str  # the anonymised network; '' for a missing or malformed address
    net_hash: int  # half of the visitor hash


class AgentFacts(NamedTuple):
    text: str  # COPY text of browser, os, device, is_bot (the agent itself is stored once, by id)
    classes: tuple[str, str, str, bool]  # browser, os, device, is_bot
    orphan_text: str  # COPY text of user_agent, is_bot (orphan visits keep no classes)
    agent_hash: int  # the other half of the visitor hash


class RefererFacts(NamedTuple):
    text: str  # COPY text of referer, referer_host
    host: str
    referer_text: str  # COPY text of referer


def _hash64(value: str, key: bytes) -> int:
    """A signed 64-bit hash (PostgreSQL bigint), stable across processes and hosts."""
    return int.from_bytes(blake2b(value.encode("utf-8", "replace"), digest_size=8, key=key).digest(),
                          "little", signed=True)


def visitor_hash(visitor_net: str, user_agent: str) -> int:
    """The visitor of a click: what the importer counts distinct visitors by."""
    return _hash64(visitor_net, b"net") ^ _hash64(user_agent, b"agent")


def copy_text(value: str) -> str:
    """`value` escaped for PostgreSQL's COPY text format."""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        value = value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return value


def anonymise(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    network = ipaddress.ip_network(f"{address}/{ANONYMISED_PREFIX[address.version]}", strict=False)
    return str(network.network_address)


def _ipv4_net(raw: str) -> str | None:
    """The anonymised /24 of a dotted-quad IPv4 address, or None if raw is not one."""
    parts = raw.split(".")
    if len(parts) != 4:
        return None
    for part in parts:
        if not (part.isdigit() and part.isascii() and len(part) <= 3) or int(part) > 255 or (part[0] == "0" and part != "0"):
            return None
    return f"{parts[0]}.{parts[1]}.{parts[2]}.0"


def stored_user_agent(raw: str) -> str:
    """A User-Agent header as stored: cut to UA_MAX characters, without NUL
    (which PostgreSQL's text refuses) or lone surrogates (not UTF-8)."""
    return raw[:UA_MAX].replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def referer_host(referer: str) -> str:
    """Lower-case host of a Referer header; '' when there is none, 'unknown' when it has no host."""
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


class Enricher:
    """Turns a click's ip, ua and ref into COPY fields (the *_COLUMNS below)
    and the values the rollups count: `ip` returns IpFacts, `agent` AgentFacts,
    `referer` RefererFacts.

    `enabled=False` skips the parsers (every class is 'unknown'); the address
    is still validated and stored as `ip_privacy` says.
    """

    # The columns each method's text fills, in order.
    IP_COLUMNS = ("ip", "country")
    AGENT_COLUMNS = ("browser", "os", "device", "is_bot")
    REFERER_COLUMNS = ("referer", "referer_host")

    def __init__(self, *, ip_privacy: str = "anonymise", enabled: bool = True, cache_size: int = CACHE_SIZE):
        if ip_privacy not in IP_PRIVACY_CHOICES:
            raise ValueError(f"ip_privacy must be one of {IP_PRIVACY_CHOICES}, not {ip_privacy!r}")
        self.ip_privacy = ip_privacy
        self.enabled = enabled
        self._geo = GeoIP2Fast(geoip2fast_data_file="geoip2fast-ipv6.dat.gz", verbose=False) if enabled else None
        self._crawlers = CrawlerDetect() if enabled else None
        self.ip = lru_cache(maxsize=cache_size)(self._ip)
        self.agent = lru_cache(maxsize=cache_size)(self._agent)
        self.referer = lru_cache(maxsize=cache_size)(self._referer)
        self.country = lru_cache(maxsize=cache_size)(self._country)

    def _ip(self, raw: str) -> IpFacts:
        visitor_net = _ipv4_net(raw)
        if visitor_net is not None:  # the common case, without ipaddress's cost
            stored = {"anonymise": visitor_net, "full": raw, "none": "\\N"}[self.ip_privacy]
        else:
            try:
                address = ipaddress.ip_address(raw)
            except ValueError:
                return IpFacts("\\N\t" + UNKNOWN, UNKNOWN, "", _hash64("", b"net"))
            if address.version == 6 and address.ipv4_mapped:
                address = address.ipv4_mapped
            visitor_net = anonymise(address)
            stored = {"anonymise": visitor_net, "full": str(address), "none": "\\N"}[self.ip_privacy]
        country = self.country(visitor_net)
        return IpFacts(f"{stored}\t{copy_text(country)}", country, visitor_net, _hash64(visitor_net, b"net"))

    def _country(self, visitor_net: str) -> str:
        """Country of an anonymised network (the geo data has no finer grain)."""
        if self._geo is None:
            return UNKNOWN
        try:
            code = self._geo.lookup(visitor_net).country_code
        except Exception:  # a data problem in the geo library must not cost the click
            return UNKNOWN
        return code if len(code) == 2 and code.isalpha() else UNKNOWN

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
                user_agent=user_agent, os_family=os_family,
                device_family=result.device.family if result.device else "", is_bot=is_bot,
            )
            is_bot = is_bot or device == "bot"
            browser, os_family = (UNKNOWN if v == "Other" else v for v in (browser, os_family))
        bot = "\tt" if is_bot else "\tf"
        agent_text = copy_text(user_agent)
        text = "\t".join(copy_text(field) for field in (browser, os_family, device)) + bot
        return AgentFacts(text, (browser, os_family, device, is_bot), agent_text + bot,
                          _hash64(user_agent, b"agent"))

    def _referer(self, raw: str) -> RefererFacts:
        referer = raw[:REFERER_MAX].replace("\x00", "")
        host = referer_host(referer) if self.enabled else UNKNOWN
        referer_text = copy_text(referer)
        return RefererFacts(f"{referer_text}\t{copy_text(host)}", host, referer_text)

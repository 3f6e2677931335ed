"""Lookups beside the lists, each off unless its setting is set: Google Safe
Browsing's Lookup API (v4, `threatMatches:find`) for the URLs, and DNS
blocklists (a DNSBL zone such as Spamhaus DBL: `<domain>.<zone>` has an
A record in 127.0.1.0/24 when listed) for the hosts, through the
configured resolver.

Asked when a link is made or changed (links.services), never when it is
published. Each answer is kept a few minutes in the process; a bulk's or
an import's destinations are asked together first (`prefetch`). A lookup
that fails (the service away, too slow, a resolver that refuses) lets the
destination through and is logged: the lists still hold."""

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import dns.exception
import dns.resolver
from django.conf import settings

from slingshot.outbound import guarded
from slingshot.outbound.errors import OutboundError

from .formats import canonical_url
from .screen import suffixes

log = logging.getLogger(__name__)

CACHE_SECONDS = 600.0
SAFE_BROWSING_BATCH = 500  # threatEntries a request may carry
THREAT_TYPES = ["MALWARE", "SOCIAL_ENGINEERING", "UNWANTED_SOFTWARE", "POTENTIALLY_HARMFUL_APPLICATION"]
DNS_THREADS = 16

_cache: dict[tuple[str, str], tuple[float, str]] = {}  # (kind, key) -> (when, why listed or "")


@dataclass(frozen=True)
class Hit:
    service: str  # "Google Safe Browsing", or the DNSBL zone
    matched: str
    why: str  # the threat type, or the DNSBL's answer


def enabled() -> bool:
    return bool(settings.SAFE_BROWSING_API_KEY or settings.SCREEN_DNSBL_ZONES)


def forget() -> None:
    _cache.clear()


def _cached(kind: str, key: str) -> str | None:
    found = _cache.get((kind, key))
    if found and time.monotonic() - found[0] < CACHE_SECONDS:
        return found[1]
    return None


def _keep(kind: str, key: str, why: str) -> None:
    _cache[(kind, key)] = (time.monotonic(), why)


def _timeout() -> float:
    return settings.SCREEN_LOOKUP_TIMEOUT_MS / 1000


def _safe_browsing(urls: list[str]) -> None:
    """Asks Safe Browsing about the URLs not known yet, 500 a request."""
    unknown = [url for url in dict.fromkeys(urls) if _cached("sb", url) is None]
    if not unknown or not settings.SAFE_BROWSING_API_KEY:
        return
    session = guarded.session(private_addresses=True)  # the operator's endpoint: Google's, or a proxy of theirs
    for start in range(0, len(unknown), SAFE_BROWSING_BATCH):
        batch = unknown[start : start + SAFE_BROWSING_BATCH]
        body = {
            "client": {"clientId": "slingshot", "clientVersion": "1"},
            "threatInfo": {
                "threatTypes": THREAT_TYPES,
                "platformTypes": ["ANY_PLATFORM"],
                "threatEntryTypes": ["URL"],
                "threatEntries": [{"url": url} for url in batch],
            },
        }
        try:
            response = session.post(
                settings.SAFE_BROWSING_URL,
                params={"key": settings.SAFE_BROWSING_API_KEY},
                json=body,
                timeout=_timeout(),
            )
            if response.status_code != 200:
                raise OutboundError(f"answered {response.status_code}")
            matches = response.json().get("matches") or []
        except (OSError, OutboundError, ValueError, AttributeError) as exc:
            log.warning("Safe Browsing not asked about %d URLs, let through: %s", len(batch), exc)
            continue
        found = {}
        for match in matches:
            url = ((match or {}).get("threat") or {}).get("url")
            if isinstance(url, str):
                found[url] = str(match.get("threatType") or "listed")
        for url in batch:
            _keep("sb", url, found.get(url, ""))


def _resolver() -> dns.resolver.Resolver:
    if settings.SCREEN_DNS_RESOLVER:
        resolver = dns.resolver.Resolver(configure=False)
        host, _, port = settings.SCREEN_DNS_RESOLVER.rpartition(":")
        resolver.nameservers = [host or settings.SCREEN_DNS_RESOLVER]
        resolver.port = int(port) if host else 53
    else:
        resolver = dns.resolver.Resolver()
    resolver.lifetime = resolver.timeout = _timeout()
    return resolver


def _ask_zone(resolver: dns.resolver.Resolver, name: str, zone: str) -> None:
    """Whether `name` is listed in `zone`: an A record in 127.0.1.0/24 (or
    127.0.0.2 - 127.0.0.255, as older zones answer); 127.255.255.x is the
    zone refusing the resolver, which is no answer."""
    try:
        answers = [record.to_text() for record in resolver.resolve(f"{name}.{zone}", "A")]
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        _keep("dnsbl", f"{name} {zone}", "")
        return
    except (dns.exception.DNSException, OSError) as exc:
        log.warning("DNSBL %s not asked about %s, let through: %s", zone, name, exc)
        return
    listed = [a for a in answers if a.startswith("127.") and not a.startswith("127.255.255.") and a != "127.0.0.1"]
    if answers and not listed:
        log.warning("DNSBL %s refused the resolver for %s (%s): let through", zone, name, ", ".join(answers))
    _keep("dnsbl", f"{name} {zone}", listed[0] if listed else "")


def _dnsbl(hosts: list[str]) -> None:
    zones = settings.SCREEN_DNSBL_ZONES
    wanted = [
        (name, zone)
        for host in dict.fromkeys(hosts)
        if not host.startswith("[") and not host.replace(".", "").isdigit()
        for name in suffixes(host)
        for zone in zones
        if _cached("dnsbl", f"{name} {zone}") is None
    ]
    if not wanted:
        return
    resolver = _resolver()
    if len(wanted) == 1:
        _ask_zone(resolver, *wanted[0])
        return
    with ThreadPoolExecutor(min(DNS_THREADS, len(wanted))) as pool:
        list(pool.map(lambda pair: _ask_zone(resolver, *pair), wanted))


def prefetch(targets: list[tuple[str, str]]) -> None:
    """Asks about many (host, url) at once: a bulk's, an import's."""
    if not enabled() or not targets:
        return
    _safe_browsing([canonical_url(url) or url for _, url in targets])
    if settings.SCREEN_DNSBL_ZONES:
        _dnsbl([host for host, _ in targets])


def hit(host: str, url: str) -> Hit | None:
    """Whether a lookup lists this destination."""
    if not enabled():
        return None
    prefetch([(host, url)])
    found = answer(host, url)
    return found or None


def answer(host: str, url: str) -> Hit | None | bool:
    """What the lookups asked already (prefetch) say of this destination,
    asking nothing: the Hit of one that lists it; None when every one
    answered that it is not listed; False when one has not answered (it
    failed, or was not asked)."""
    key = canonical_url(url) or url
    answered = True
    if settings.SAFE_BROWSING_API_KEY:
        why = _cached("sb", key)
        if why:
            return Hit("Google Safe Browsing", key, why)
        answered = why is not None
    if settings.SCREEN_DNSBL_ZONES and not host.startswith("["):
        for name in suffixes(host):
            for zone in settings.SCREEN_DNSBL_ZONES:
                why = _cached("dnsbl", f"{name} {zone}")
                if why:
                    return Hit(zone, name, why)
                answered = answered and why is not None
    return None if answered else False

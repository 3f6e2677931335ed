"""Rules for what a link may hold. The edge trusts these (docs/contract.md)."""
import re
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

REDIRECT_STATUSES = (301, 302, 307, 308)
_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f]")


TAG_PATTERN = re.compile(r"[\w.-]{1,50}")


def validate_tags(value: list[str]) -> None:
    for tag in value:
        if not isinstance(tag, str) or not TAG_PATTERN.fullmatch(tag):
            raise ValidationError(
                "Tags are 1 to 50 letters, digits, '.', '-' or '_': %(tag)r is not.", code="invalid_tag",
                params={"tag": tag},
            )


def validate_target_url(value: str) -> None:
    limit = settings.LINK_URL_MAX_LENGTH
    if len(value) > limit:
        raise ValidationError("The URL is longer than %(limit)d characters.", code="too_long", params={"limit": limit})
    if _UNSAFE_URL_CHARS.search(value):
        raise ValidationError("The URL must not contain spaces or control characters.", code="unsafe")
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https"):
        raise ValidationError("Only http and https URLs can be shortened.", code="scheme")
    try:
        host = parts.hostname
    except ValueError:
        host = None
    if not host:
        raise ValidationError("The URL needs a host name.", code="no_host")
    if _same_host(host, parts, settings.EDGE_BASE_URL):
        raise ValidationError("A link cannot point back to this shortener.", code="loop")
    blocked = _blocked_domain(host.rstrip(".").lower(), settings.LINK_DOMAIN_BLOCKLIST)
    if blocked:
        raise ValidationError("Links to %(domain)s are not allowed here.", code="blocked", params={"domain": blocked})


def _blocked_domain(host: str, blocklist: list[str]) -> str | None:
    """The blocklisted domain that host is, or is a subdomain of."""
    for domain in blocklist:
        domain = domain.strip(".").lower()
        if domain and (host == domain or host.endswith("." + domain)):
            return domain
    return None


def _same_host(host: str, parts, base_url: str) -> bool:
    edge = urlsplit(base_url)
    try:
        return host.lower() == (edge.hostname or "").lower() and (parts.port or _default_port(parts.scheme)) == (
            edge.port or _default_port(edge.scheme)
        )
    except ValueError:
        return False


def _default_port(scheme: str) -> int:
    return 443 if scheme.lower() == "https" else 80

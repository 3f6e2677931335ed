"""The slug rule: what a short link's path may be. The edge checks paths
against the same rule before any lookup (EDGE_SLUG_ALPHABET,
EDGE_SLUG_MIN_LENGTH and EDGE_SLUG_MAX_LENGTH default to it), and
`edge/t/test_contract.py` holds the two together."""

import re
import secrets
import string
from functools import cache

from django.conf import settings
from django.core.exceptions import ValidationError
from django.urls import get_resolver
from django.urls.resolvers import RoutePattern

from slingshot.contract import EDGE_PATHS

# As EDGE_SLUG_ALPHABET spells it, and as a character class.
ALPHABET = "A-Za-z0-9_-"
MIN_LENGTH = 1
MAX_LENGTH = 64
PATTERN = rf"[{ALPHABET}]{{{MIN_LENGTH},{MAX_LENGTH}}}"  # for URL patterns and query parameters
_FULL_MATCH = re.compile(PATTERN).fullmatch
# Generated slugs leave out '-' and '_', which people misread when a slug is spoken or printed.
GENERATED_ALPHABET = string.ascii_letters + string.digits


@cache
def reserved() -> frozenset[str]:
    """Slugs whose short URL or dashboard page another route would shadow:
    the edge's own paths, the dashboard's first path segments, and the
    literal segments beside a slug under `links/` (`links/new/`)."""
    words = {*EDGE_PATHS, settings.STATIC_URL.strip("/").split("/")[0]}
    for route in _routes(get_resolver().url_patterns):
        segments = route.split("/")
        words.add(segments[0])
        if segments[0] == "links" and len(segments) > 1:
            words.add(segments[1])
    return frozenset(word.lower() for word in words if _FULL_MATCH(word))


def _routes(patterns, prefix: str = ""):
    """The literal beginnings of every route: 'links/new', 'links/' and so on."""
    for pattern in patterns:
        route = prefix + _literal(pattern.pattern)
        if hasattr(pattern, "url_patterns"):
            yield from _routes(pattern.url_patterns, route)
        else:
            yield route


def _literal(pattern) -> str:
    """The part of a route before its first parameter (or regex operator)."""
    if isinstance(pattern, RoutePattern):
        return str(pattern).split("<", 1)[0]
    return re.split(r"[<(\[\\$.*+?{|]", str(pattern).lstrip("^"), maxsplit=1)[0]


def validate_slug(value: str) -> None:
    if not isinstance(value, str) or not _FULL_MATCH(value):
        raise ValidationError(
            "Use %(min)d to %(max)d characters: letters, digits, '-' and '_'.",
            code="invalid_slug",
            params={"min": MIN_LENGTH, "max": MAX_LENGTH},
        )
    if value.lower() in reserved():
        raise ValidationError("'%(slug)s' is reserved.", code="reserved_slug", params={"slug": value})


def generate_slug(length: int) -> str:
    while True:
        slug = "".join(secrets.choice(GENERATED_ALPHABET) for _ in range(length))
        if slug.lower() not in reserved():
            return slug

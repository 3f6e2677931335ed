"""Shlink's names for a link's options, and its ShortUrl object: what the
views read from a body and write back, made from links/fields.py's
options (a Shlink name for each option it has), so the services' checks
and messages are the ones /api/v1 gives."""

from collections.abc import Callable, Mapping
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError

from links.fields import BY_NAME
from links.models import Link

from .base import atom, flag, moment, shown_domain, whole
from .problems import Problem, invalid_data


def _text(value, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise invalid_data({name: ["Enter a string."]})
    return value


def _url(value, name: str) -> str:
    if not isinstance(value, str):
        raise invalid_data({name: ["Enter a URL as a string."]})
    return value


def _tags(value, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise invalid_data({name: ["Enter a list of strings."]})
    return list(dict.fromkeys(tag.strip() for tag in value))


# ShortUrlEdition: Shlink's name of each option it has, and how its value
# is read (a problem for a value of the wrong type; the services check the rest).
EDITION: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "longUrl": ("url", _url),
    "validSince": ("valid_since", moment),
    "validUntil": ("expires_at", moment),
    "maxVisits": ("max_visits", lambda value, name: whole(value, name)),
    "tags": ("tags", _tags),
    "title": ("title", _text),
    "crawlable": ("crawlable", lambda value, name: flag(value, name)),
    "forwardQuery": ("forward_query", lambda value, name: flag(value, name, default=True)),
}
assert all(option in BY_NAME for option, _ in EDITION.values()), "every Shlink name is of an option"
# What findIfExists compares besides the long URL, slug, domain and tags,
# when the request gives it.
FOUND_BY = tuple(EDITION[name][0] for name in ("validSince", "validUntil", "maxVisits"))
# Shlink's names of Slingshot's, for the elements a problem names.
SHLINK_NAMES = {
    **{option: shlink for shlink, (option, _) in EDITION.items()},
    "slug": "customSlug",
    "domain": "domain",
    "rules": "redirectRules",
}
# Shlink's defaults for what its clients leave out (its SDK drops every
# false value of a new short URL): a query forwarded, not crawlable.
SHLINK_DEFAULTS = {"forward_query": True, "crawlable": False}


def edition(body: Mapping[str, Any]) -> dict[str, Any]:
    """The options a body of Shlink's sets, by Slingshot's names. Members
    Shlink's API does not have are left alone, as Shlink leaves them."""
    return {option: read(body[name], name) for name, (option, read) in EDITION.items() if name in body}


def refused(exc: DjangoValidationError) -> Problem:
    """A service's ValidationError as Shlink's invalid-data, under Shlink's names."""
    if not hasattr(exc, "error_dict"):
        return invalid_data({"body": exc.messages})
    errors: dict[str, list[str]] = {}
    for field, messages in exc.message_dict.items():
        name = "body" if field == NON_FIELD_ERRORS else SHLINK_NAMES.get(field, field)
        errors.setdefault(name, []).extend(messages)
    return invalid_data(errors)


def slug_taken(exc: DjangoValidationError) -> bool:
    return any(error.code == "unique" for error in getattr(exc, "error_dict", {}).get("slug", []))


def non_unique_slug(slug: str, domain: str | None) -> Problem:
    suffix = f' for domain "{domain}"' if domain else ""
    extra = {"customSlug": slug, **({"domain": domain} if domain else {})}
    return Problem(
        400, "non-unique-slug", "Invalid custom slug", f'Provided slug "{slug}" is already in use{suffix}.', **extra
    )


def short_url(link: Link) -> dict:
    """Shlink's ShortUrl of a link read with its click totals
    (clicks.selectors.with_click_totals) and its domain."""
    clicks, humans = getattr(link, "clicks", 0), getattr(link, "human_clicks", 0)
    return {
        "shortCode": link.slug,
        "shortUrl": link.short_url,
        "longUrl": link.url,
        "dateCreated": atom(link.created_at),
        "visitsSummary": {"total": clicks, "nonBots": humans, "bots": clicks - humans},
        "tags": list(link.tags),
        "meta": {
            "validSince": atom(link.valid_since),
            "validUntil": atom(link.expires_at),
            "maxVisits": link.max_visits,
        },
        "domain": shown_domain(link.domain),
        "title": link.title or None,
        "crawlable": link.crawlable,
        "forwardQuery": link.forward_query,
        "hasRedirectRules": bool(link.rules),
    }

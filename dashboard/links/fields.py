"""A link's options, declared once: what a person sets on a link, in the
order people see them.

Each option is a field of links.models.Link, which has its type, default,
label, help text and checks. OPTIONS says what the rest of Slingshot makes
of it, and everything that speaks a link's options is made from it: the
services take a LinkFields (links/services.py), the API's serializer and
the link form list OPTIONS' names (api/links.py, web/link_forms.py), the
CSV columns are the options with a cell (links/imports.py), the audit log
shows what `audited` says, and the publisher writes what `edge` says
(links/publishing.py, docs/contract.md). Adding an option is a field of the model with its
migration, a line here, the edge where it acts, the docs and the tests.
"""

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields, make_dataclass
from datetime import datetime, time, timezone
from typing import Any

from django.utils.dateparse import parse_date, parse_datetime

from .models import Link
from .rules import validate_rules, validate_split
from .validation import normalise_target

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


# --- CSV cells -------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """How a CSV cell holds an option: `read` takes the text of a cell (""
    for an empty one) and raises ValueError with words for the person;
    `write` gives the text an export writes, which `read` takes back."""

    read: Callable[[str], Any]
    write: Callable[[Any], str]


def _read_flag(default: bool) -> Callable[[str], bool]:
    def read(value: str) -> bool:
        if value == "":
            return default
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise ValueError("Use true or false.")

    return read


def _read_whole(empty: int | None) -> Callable[[str], int | None]:
    def read(value: str) -> int | None:
        if value == "":
            return empty
        try:
            return int(value)
        except ValueError:
            raise ValueError("Enter a whole number.") from None

    return read


def _read_moment(value: str) -> datetime | None:
    """An ISO 8601 date or time; without an offset, UTC."""
    if value == "":
        return None
    try:
        moment = parse_datetime(value)
        if moment is None and (day := parse_date(value)) is not None:
            moment = datetime.combine(day, time())
    except ValueError:
        moment = None
    if moment is None:
        raise ValueError("Enter a date and time as 2030-01-31T12:00:00Z (ISO 8601; UTC unless an offset is given).")
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _read_json_list(value: str) -> list:
    if value == "":
        return []
    try:
        found = json.loads(value)
    except ValueError:
        raise ValueError("Enter a JSON list, as the export writes it.") from None
    if not isinstance(found, list):
        raise ValueError("Enter a JSON list, as the export writes it.")
    return found


TEXT = Cell(read=str, write=str)
OPTIONAL_TEXT = Cell(read=lambda value: value or None, write=lambda value: value or "")
TAGS = Cell(read=lambda value: [tag.strip() for tag in value.split(",") if tag.strip()], write=",".join)
STATUS = Cell(read=_read_whole(302), write=str)
COUNT = Cell(read=_read_whole(None), write=lambda value: "" if value is None else str(value))
MOMENT = Cell(read=_read_moment, write=lambda value: value.isoformat() if value else "")
JSON_LIST = Cell(read=_read_json_list, write=lambda value: json.dumps(value, separators=(",", ":")) if value else "")


def _flag(default: bool) -> Cell:
    return Cell(read=_read_flag(default), write=lambda value: str(value).lower())


# --- what the edge is told -------------------------------------------------------


def _unix(moment: datetime | None, *, up: bool = False) -> int | None:
    """Unix seconds, rounded down, or up (a link is never live early)."""
    if moment is None:
        return None
    return math.ceil(moment.timestamp()) if up else math.floor(moment.timestamp())


def _optional_target(url: str) -> str | None:
    """A target the edge may send a visitor to, or None for none."""
    return normalise_target(url) if url else None


def _optional_text(text: str) -> str | None:
    return text or None


# --- the options ------------------------------------------------------------------

_MODEL_DEFAULT = object()


@dataclass(frozen=True)
class Option:
    """What Slingshot makes of one field of Link that a person sets."""

    name: str
    # The CSV cell of its column in exports and imports; None: no column.
    csv: Cell | None = TEXT
    # The audit log shows its value before and after a change; False: only
    # whether it is set (a password's hash is never shown).
    audited: bool = True
    # The key of the link's value in Redis under which the edge reads it,
    # and the value the edge gets (docs/contract.md, "Links"); None: the
    # edge is not told. `to_edge` may raise ValidationError for a value
    # refused since it was saved: the link is then published not served.
    edge: str | None = None
    to_edge: Callable[[Any], Any] = lambda value: value
    # A new link's value when the person gives none: the model field's
    # default, unless said here (None for what the services choose).
    default: Any = _MODEL_DEFAULT
    # Its value in the API's example of a link (api/link_serializers.py), as JSON has it.
    example: Any = None


_RULES_EXAMPLE = [
    {"url": "https://apps.apple.com/app/id1", "conditions": [{"type": "device", "value": "ios"}]},
    {
        "url": "https://example.de/fruehling",
        "conditions": [{"type": "language", "value": "de"}, {"type": "country", "value": "DE"}],
    },
]

OPTIONS: tuple[Option, ...] = (
    Option("url", edge="url", to_edge=normalise_target, example="https://example.com/spring-sale?ref=newsletter"),
    Option("domain", csv=None, default=None),  # links/imports.py reads and writes its host
    Option("slug", csv=OPTIONAL_TEXT, default=None, example="spring"),
    Option("title", example="Spring sale"),
    Option("description", example="The newsletter's link to the spring sale."),
    Option("tags", csv=TAGS, example=["newsletter", "sale"]),
    Option("redirect_status", csv=STATUS, edge="status", example=302),
    Option(
        "valid_since",
        csv=MOMENT,
        edge="valid_since",
        to_edge=lambda moment: _unix(moment, up=True),
        example="2027-03-20T00:00:00Z",
    ),
    Option("expires_at", csv=MOMENT, edge="expires_at", to_edge=_unix, example="2027-06-01T00:00:00Z"),
    Option("max_visits", csv=COUNT, edge="max_visits", example=10000),
    Option("expired_url", edge="expired_url", to_edge=_optional_target, example="https://example.com/sale-over"),
    Option("forward_query", csv=_flag(False), edge="forward_query", example=True),
    Option("crawlable", csv=_flag(False), example=False),  # the edge is told by the domain's robots.txt
    Option("password", csv=None, audited=False, edge="password", to_edge=bool, default=None),
    Option("is_active", csv=_flag(True), edge="active", example=True),
    Option("rules", csv=JSON_LIST, edge="rules", to_edge=validate_rules, example=_RULES_EXAMPLE),
    Option("split", csv=JSON_LIST, edge="split", to_edge=validate_split, example=[]),
    Option(
        "ios_url",
        edge="ios_url",
        to_edge=_optional_target,
        example="https://apps.apple.com/app/id1",
    ),
    Option(
        "android_url",
        edge="android_url",
        to_edge=_optional_target,
        example="https://play.google.com/store/apps/details?id=com.example.app",
    ),
    Option("preview_title", edge="preview_title", to_edge=_optional_text, example="Spring sale: 30% off"),
    Option(
        "preview_description",
        edge="preview_description",
        to_edge=_optional_text,
        example="Every coat and boot, until the end of March.",
    ),
    Option(
        "preview_image_url",
        edge="preview_image",
        to_edge=_optional_target,
        example="https://example.com/images/spring-card.jpg",
    ),
)
OPTION_NAMES: tuple[str, ...] = tuple(option.name for option in OPTIONS)
BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}
# The columns of a links CSV, export and import alike.
CSV_OPTIONS: tuple[Option, ...] = tuple(option for option in OPTIONS if option.csv is not None)
AUDITED: tuple[str, ...] = tuple(option.name for option in OPTIONS if option.audited)
PUBLISHED: tuple[Option, ...] = tuple(option for option in OPTIONS if option.edge is not None)


def _default(option: Option):
    """The dataclass field of an option: required when the model field must
    be given (the target URL), else its default, or what blank is for it."""
    if option.default is not _MODEL_DEFAULT:
        return field(default=option.default)
    model_field = Link._meta.get_field(option.name)
    if model_field.has_default() and callable(model_field.default):
        return field(default_factory=model_field.default)
    if model_field.has_default() or model_field.blank:
        return field(default=model_field.get_default())
    return field()


LinkFields = make_dataclass(
    "LinkFields",
    [(option.name, Any, _default(option)) for option in OPTIONS],
    kw_only=True,
    frozen=True,
)
LinkFields.__module__ = __name__
LinkFields.__doc__ = """The options of a link as a person gives them, one attribute per OPTIONS
entry (the model's default for those left out; `slug`, `domain` and
`password` None: generated, the default domain, none). What
links.services.link_validate and link_create take; a password is in clear
here, and hashed by the services."""


def values_of(link_fields) -> dict[str, Any]:
    """The options of a LinkFields as keyword arguments."""
    return {item.name: getattr(link_fields, item.name) for item in fields(link_fields)}

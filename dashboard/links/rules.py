"""Redirect rules and A/B splits of a link: what they may hold, checked in
one place for the API, the dashboard's form and the admin.

A link's `rules` is an ordered list of `{"url", "conditions": [...]}`; the
edge (edge/slingshot/rules.lua) sends a visitor to the first rule whose
conditions all hold. Its `split` is a list of `{"url", "weight"}`, used when
no rule matched: each visitor always gets the same destination, and the
destinations share the visitors by weight. docs/api.md documents both.

`validate_rules` and `validate_split` return the value as the link keeps it
and the publisher sends it (targets normalised, codes in one case), or raise
a ValidationError whose message starts with the path of the bad part, such
as `rules[1].conditions[0].value`.
"""

import ipaddress
import re
from dataclasses import dataclass
from datetime import UTC, datetime

import pycountry
from django.core.exceptions import ValidationError

from links.validation import normalise_target
from slingshot.text import shown

MAX_RULES = 20
MAX_CONDITIONS = 10
MIN_SPLIT = 2
MAX_SPLIT = 10
MAX_WEIGHT = 100
MAX_QUERY_TEXT = 200

CONDITION_TYPES = ("device", "language", "country", "query", "ip", "browser", "before", "after")
DEVICES = ("ios", "android", "mobile", "desktop", "windows", "macos", "linux", "chromeos")
BROWSERS = ("chrome", "firefox", "edge", "safari", "opera", "android_browser")
# The longest address pattern an ip condition takes (an IPv6 range is at most 43).
MAX_IP_TEXT = 50

# A BCP 47 language tag as browsers send it: a language, then subtags.
_LANGUAGE_TAG = re.compile(r"([A-Za-z]{2,3})((?:-[A-Za-z0-9]{1,8}){0,3})")
# Printable ASCII but `&`, `=`, `#`: what a query key or value compares as.
_QUERY_TEXT = re.compile(r"[!-~]+")


def _refuse(path: str, message: str) -> ValidationError:
    return ValidationError(f"{path}: {message}", code="invalid_rule")


def _quoted(value) -> str:
    """A value as a message quotes it, what cannot be seen or kept escaped."""
    return f"'{shown(value)}'" if isinstance(value, str) else repr(value)


def _object(value, path: str, required: set[str], optional: set[str] = frozenset()) -> dict:
    if not isinstance(value, dict):
        raise _refuse(path, "must be an object.")
    unknown = sorted(set(value) - required - optional)
    if unknown:
        raise _refuse(path, f"unknown field(s) {', '.join(shown(name) for name in unknown)}.")
    missing = sorted(required - set(value))
    if missing:
        raise _refuse(path, f"missing field(s) {', '.join(missing)}.")
    return value


def _list(value, path: str, most: int, least: int = 0) -> list:
    if not isinstance(value, list):
        raise _refuse(path, "must be a list.")
    if not least <= len(value) <= most:
        raise _refuse(path, f"must hold {least} to {most} items." if least else f"must hold at most {most} items.")
    return value


def _target(value, path: str) -> str:
    try:
        return normalise_target(value)
    except ValidationError as exc:
        raise _refuse(path, " ".join(exc.messages)) from None


def _language(value, path: str) -> str:
    match = _LANGUAGE_TAG.fullmatch(value) if isinstance(value, str) else None
    primary = match and match[1].lower()
    if not match or not (pycountry.languages.get(alpha_2=primary) or pycountry.languages.get(alpha_3=primary)):
        raise _refuse(path, f"{_quoted(value)} is not a language tag such as en or en-GB.")
    subtags = [part.upper() if len(part) == 2 else part.lower() for part in match[2].split("-")[1:]]
    return "-".join([primary, *subtags])


def _country(value, path: str) -> str:
    code = value.upper() if isinstance(value, str) and len(value) == 2 else None
    if not code or pycountry.countries.get(alpha_2=code) is None:
        raise _refuse(path, f"{_quoted(value)} is not an ISO 3166 two-letter country code.")
    return code


def _named(value, path: str, noun: str, names: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.lower() not in names:
        raise _refuse(path, f"{_quoted(value)} is not a {noun}: one of {', '.join(names)}.")
    return value.lower()


def _wildcard(text: str) -> str | None:
    """Shlink's IPv4 pattern with `*` for any octet (192.168.1.*, 10.*.*.1), or None."""
    octets = text.split(".")
    if len(octets) != 4 or "*" not in octets:
        return None
    if not all(o == "*" or (o.isdigit() and o.isascii() and str(int(o)) == o and int(o) <= 255) for o in octets):
        return None
    return text


def _ip(value, path: str) -> str:
    """One address, a CIDR range (host bits cleared) or a wildcard pattern,
    as the edge compiles it: an IPv4-mapped IPv6 address written as IPv4."""
    refusal = _refuse(
        path,
        f"{_quoted(value)} is not an IP address, a CIDR range such as 192.0.2.0/24 or 2001:db8::/32, "
        "or a wildcard such as 192.168.1.*.",
    )
    if not isinstance(value, str) or len(value) > MAX_IP_TEXT:
        raise refusal
    if "*" in value:
        if (pattern := _wildcard(value)) is None:
            raise refusal
        return pattern
    try:
        network = ipaddress.ip_network(value, strict=False) if "/" in value else None
        address = ipaddress.ip_address(value) if network is None else network.network_address
    except ValueError:
        raise refusal from None
    if getattr(address, "scope_id", None):
        raise refusal
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        if network is not None:
            raise _refuse(path, f"{_quoted(value)} is an IPv4 range: write it as IPv4, such as 192.0.2.0/24.")
        return str(mapped)
    return str(network) if network is not None else str(address)


def _moment(value, path: str) -> str:
    """An ISO 8601 date and time (Shlink's, and what JavaScript's
    toISOString gives) as UTC to the second; one without a zone is UTC, a
    date alone its midnight."""
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) and len(value) <= 64 else None
    except ValueError:
        moment = None
    if moment is None:
        raise _refuse(path, f"{_quoted(value)} is not an ISO 8601 date and time such as 2030-01-31T23:59:59Z.")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:
        raise _refuse(path, f"{_quoted(value)} is out of the years 1 to 9999 in UTC.") from None
    # How the link keeps it: 2030-01-31T23:59:59Z, all four digits of the year.
    return utc.replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def _query_text(value, path: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_QUERY_TEXT or not _QUERY_TEXT.fullmatch(value):
        raise _refuse(path, f"must be 1 to {MAX_QUERY_TEXT} printable characters without spaces.")
    return value


# How each condition type but query checks and keeps its value.
_NORMALISE = {
    "device": lambda value, path: _named(value, path, "device", DEVICES),
    "browser": lambda value, path: _named(value, path, "browser", BROWSERS),
    "language": _language,
    "country": _country,
    "ip": _ip,
    "before": _moment,
    "after": _moment,
}


def _condition(value, path: str) -> dict:
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "query":
        _object(value, path, {"type", "key"}, {"value"})
        text = value.get("value")
        return {
            "type": "query",
            "key": _query_text(value["key"], f"{path}.key"),
            "value": None if text is None else _query_text(text, f"{path}.value"),
        }
    _object(value, path, {"type", "value"}, {"key"})
    if kind not in CONDITION_TYPES:
        raise _refuse(f"{path}.type", f"must be one of {', '.join(CONDITION_TYPES)}.")
    if value.get("key") is not None:
        raise _refuse(f"{path}.key", f"is only for query conditions, not {kind}.")
    return {"type": kind, "value": _NORMALISE[kind](value["value"], f"{path}.value")}


def validate_rules(value) -> list[dict]:
    """The link's rules as it keeps them, or a ValidationError naming the bad part."""
    rules = []
    for i, rule in enumerate(_list(value, "rules", MAX_RULES)):
        path = f"rules[{i}]"
        _object(rule, path, {"url", "conditions"})
        conditions = _list(rule["conditions"], f"{path}.conditions", MAX_CONDITIONS, least=1)
        rules.append(
            {
                "url": _target(rule["url"], f"{path}.url"),
                "conditions": [_condition(c, f"{path}.conditions[{j}]") for j, c in enumerate(conditions)],
            }
        )
    return rules


def validate_split(value) -> list[dict]:
    """The link's A/B split as it keeps it (empty: none), or a ValidationError."""
    split = _list(value, "split", MAX_SPLIT)
    if len(split) == 1:
        raise _refuse("split", f"must hold {MIN_SPLIT} to {MAX_SPLIT} destinations, or none.")
    destinations = []
    for i, destination in enumerate(split):
        path = f"split[{i}]"
        _object(destination, path, {"url", "weight"})
        weight = destination["weight"]
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= MAX_WEIGHT:
            raise _refuse(f"{path}.weight", f"must be a whole number from 1 to {MAX_WEIGHT}.")
        destinations.append({"url": _target(destination["url"], f"{path}.url"), "weight": weight})
    return destinations


def check_rules(value) -> None:
    """A model field validator: validate_rules, its result left aside."""
    validate_rules(value)


def check_split(value) -> None:
    validate_split(value)


@dataclass(frozen=True)
class Served:
    """What may serve a visit of a link: a rule, a split's destination, or
    the link's own url. `label` is what a click records of it
    (docs/contract.md): "1".."n", "ab1".."abn", or "" for the link's url."""

    label: str
    what: str
    url: str


_DESCRIBED = {"ip": "address matches {}", "before": "date before {}", "after": "date after {}"}


def _describe(condition: dict) -> str:
    kind, value = condition["type"], condition.get("value")
    if kind == "query":
        return f"query {condition['key']}={value}" if value is not None else f"query has {condition['key']}"
    return _DESCRIBED.get(kind, f"{kind} is {{}}").format(value)


def served_by(*, rules: list[dict], split: list[dict], url: str) -> list[Served]:
    """Each way a visit of the link may go, in the order the edge tries them."""
    served = [
        Served(str(i), f"Rule {i}: " + " and ".join(_describe(c) for c in rule["conditions"]), rule["url"])
        for i, rule in enumerate(rules, 1)
    ]
    total = sum(d["weight"] for d in split)
    served += [
        Served(f"ab{i}", f"A/B {i}: {round(100 * d['weight'] / total)}% of visitors", d["url"])
        for i, d in enumerate(split, 1)
    ]
    if not split:
        served.append(Served("", "No rule matched", url))
    return served

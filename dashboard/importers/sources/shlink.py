"""A Shlink server, through its REST API v3 (docs/swagger in shlinkio/shlink):
every short URL with its domain, tags, validity, visit limit, title,
crawlable, query forwarding and redirect rules; every visit of each, and
the orphan visits.

Everything is read as it stood when the import was queued (`until`, the
API's endDate), so that a run taken over part way reads the same list.
Shlink gives a visit no id: a visit's key is its time, user agent,
referrer, country and bot flag, and its place among the visits of the same
second that share them, so that a second run finds the same keys."""

from collections.abc import Callable, Iterator
from datetime import datetime
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

from links.rules import DEVICES, validate_rules

from ..history import Orphan, Visit
from .base import Api, Source, SourceError, SourceLink, base_url, host_of, millis, moment

PAGE = 200  # short URLs per request
VISITS_PAGE = 5000  # visits per request
ORPHAN_TYPE = "invalid_short_url"

# Shlink's condition types whose value is Slingshot's as it is, and the
# type Slingshot calls each (links/rules.py checks the values).
_AS_IS = {
    "language": "language",
    "geolocation-country-code": "country",
    "ip-address": "ip",
    "browser": "browser",
    "before-date": "before",
    "after-date": "after",
}


def _condition(condition: dict) -> dict | None:
    """A Shlink redirect condition as Slingshot's (links/rules.py), or None
    for one Slingshot cannot evaluate."""
    kind, key, value = condition.get("type"), condition.get("matchKey"), condition.get("matchValue")
    if kind == "device" and isinstance(value, str) and value.lower() in DEVICES:
        return {"type": "device", "value": value.lower()}
    if kind in _AS_IS and value:
        return {"type": _AS_IS[kind], "value": value}
    if kind == "query-param" and key:
        return {"type": "query", "key": key, "value": value or ""}
    if kind == "any-value-query-param" and key:
        return {"type": "query", "key": key, "value": None}
    return None


def redirect_rules(rules: list[dict]) -> tuple[list[dict], list[str]]:
    """Shlink's redirect rules, in their priority order, as Slingshot's;
    and a note for each rule left out because Slingshot cannot evaluate one
    of its conditions (a rule without it would match more visitors than it did)."""
    found, notes = [], []
    for rule in sorted(rules, key=lambda rule: rule.get("priority", 0)):
        conditions = [_condition(condition) for condition in rule.get("conditions", [])]
        if conditions and all(conditions):
            mapped = {"url": rule.get("longUrl", ""), "conditions": conditions}
            try:
                validate_rules([mapped])
            except ValidationError as exc:
                notes.append(
                    f"redirect rule {rule.get('priority', '?')} (to {rule.get('longUrl', '')}) was left out: "
                    + " ".join(exc.messages)
                )
            else:
                found.append(mapped)
        else:
            given = rule.get("conditions", [])
            kinds = sorted({c.get("type", "?") for c, mapped in zip(given, conditions, strict=True) if not mapped})
            notes.append(
                f"redirect rule {rule.get('priority', '?')} (to {rule.get('longUrl', '')}) was left out: "
                f"Slingshot has no {', '.join(kinds) or 'empty'} condition"
            )
    return found, notes


def authority_host(authority: str | None) -> str | None:
    """The host of a domain as Shlink names it, by the authority of its
    short URLs (`s.test:8080`, the port where they have one): a Slingshot
    domain is a host, served on the edge's port."""
    if not authority:
        return None
    return host_of(f"//{authority}") or None


class ShlinkSource(Source):
    lists_visits = True

    def __init__(self, *, url: str, api_key: str, until: datetime, public_only: bool = False):
        self.url = base_url(url)
        if not api_key:
            raise SourceError("Shlink needs an API key (SHLINK_API_KEY, or --api-key-file).")
        self.key = f"shlink {self.url}"
        self.until = until.isoformat()
        self.api = Api(
            base=self.url + "/rest/v3", headers={"X-Api-Key": api_key}, name="Shlink", public_only=public_only
        )
        self._codes: list[tuple[str, str | None]] = []  # (short code, domain) of every short URL, in order
        self._totals: dict[str, int | None] = {}  # the visits Shlink counted, by external id; None: not said

    @staticmethod
    def external_id(short_code: str, domain: str | None) -> str:
        return f"{authority_host(domain) or ''}/{short_code}"

    def _pages(self, path: str, key: str, params: dict) -> Iterator[dict]:
        page = 1
        while True:
            answer = self.api.get(path, {**params, "page": page})
            try:
                listing = answer[key]
                data, pagination = listing["data"], listing.get("pagination") or {}
            except (KeyError, TypeError):
                raise SourceError(
                    f"Shlink answered {path} without {key}.data: is {self.url} a Shlink server?"
                ) from None
            yield from data
            if not data or page >= int(pagination.get("pagesCount") or 1):
                return
            page += 1

    def default_host(self) -> str | None:
        answer = self.api.get("/domains")
        for domain in ((answer.get("domains") or {}).get("data")) or []:
            if domain.get("isDefault"):
                return authority_host(domain.get("domain"))
        return None

    def links(self) -> Iterator[SourceLink]:
        self._codes = []
        params = {"itemsPerPage": PAGE, "orderBy": "dateCreated-ASC", "endDate": self.until}
        for item in self._pages("/short-urls", "shortUrls", params):
            code, domain = item["shortCode"], item.get("domain")
            self._codes.append((code, domain))
            meta = item.get("meta") or {}
            options = {
                "title": item.get("title") or "",
                "tags": list(item.get("tags") or []),
                "valid_since": moment(meta.get("validSince")),
                "expires_at": moment(meta.get("validUntil")),
                "max_visits": meta.get("maxVisits"),
                "crawlable": bool(item.get("crawlable")),
                "forward_query": bool(item.get("forwardQuery", True)),
            }
            notes = []
            if item.get("hasRedirectRules"):
                answer = self.api.get(f"/short-urls/{code}/redirect-rules", {"domain": domain} if domain else None)
                options["rules"], notes = redirect_rules(answer.get("redirectRules") or [])
            summary = item.get("visitsSummary") or {}
            self._totals[self.external_id(code, domain)] = int(summary["total"]) if "total" in summary else None
            yield SourceLink(
                external_id=self.external_id(code, domain),
                url=item["longUrl"],
                slug=code,
                host=authority_host(domain),
                options=options,
                created_at=moment(item.get("dateCreated")),
                visits=int(summary.get("total") or 0),
                notes=notes,
            )

    def visits(self, *, wanted: Callable[[str], bool], skip: int = 0) -> Iterator[tuple[str, Visit]]:
        for code, domain in self._codes:
            external_id = self.external_id(code, domain)
            if not wanted(external_id):
                self.left_out += self._totals.get(external_id) or 0
                continue
            if self._totals.get(external_id) == 0:
                continue  # none to ask for (as of `until`, the list's end too)
            params = {"itemsPerPage": VISITS_PAGE, "endDate": self.until, **({"domain": domain} if domain else {})}
            path = f"/short-urls/{code}/visits"
            if skip:
                first = self.api.get(path, {**params, "itemsPerPage": 1})
                total = int(((first.get("visits") or {}).get("pagination") or {}).get("totalItems") or 0)
                if skip >= total:
                    skip -= total
                    continue
            for visit in _keyed(self._pages(path, "visits", params)):
                if skip:
                    skip -= 1
                    continue
                yield external_id, visit

    def orphan_visits(self, *, skip: int = 0) -> Iterator[Orphan]:
        # Slingshot's orphan visits are Shlink's invalid_short_url ones; it
        # records no visit of a domain's root (base_url) or of a path that
        # cannot be a slug (regular_404).
        params = {"itemsPerPage": VISITS_PAGE, "endDate": self.until, "type": ORPHAN_TYPE}
        pages = self._pages("/visits/orphan", "visits", params)
        for visit in _keyed((item for item in pages if item.get("type", ORPHAN_TYPE) == ORPHAN_TYPE), orphan=True):
            if skip:
                skip -= 1
                continue
            yield visit

    def close(self) -> None:
        self.api.close()


def _keyed(items: Iterator[dict], *, orphan: bool = False) -> Iterator:
    """Shlink's visits (newest first) as Visit, or Orphan, with their keys."""
    second, seen = None, {}
    for item in items:
        date = item.get("date") or ""
        location = item.get("visitLocation")
        visited = item.get("visitedUrl") or ""
        facts = {
            "user_agent": item.get("userAgent") or "",
            "referer": item.get("referer") or "",
            "country": (location.get("countryCode") or "") if isinstance(location, dict) else "",
            "bot": bool(item.get("potentialBot")),
        }
        identity = (*facts.values(), visited if orphan else "")
        if date != second:
            second, seen = date, {}
        place = seen[identity] = seen.get(identity, 0) + 1
        key = "\x1f".join([date, *map(str, identity), str(place)])
        at = millis(moment(date))
        if orphan:
            yield Orphan(key=key, ms=at, path=urlsplit(visited).path.lstrip("/"), domain=host_of(visited), **facts)
        else:
            yield Visit(key=key, ms=at, **facts)

"""The YOURLS API's actions over Slingshot's links: what each answers, key
for key in YOURLS 1.10's order (its functions-api.php and
yourls_add_new_link), for output.respond to write in the asked format.

Links are those of the caller's team (auth.Caller), made through
links.services like any other, on the domain the request came to (the
default domain, or the short domain an edge passed it from); a keyword is
a slug. A link's title is its URL when it has none, as YOURLS keeps it;
`ip` is empty (Slingshot keeps no address of who made a link); `clicks`
counts every redirect, bots' too, as YOURLS does."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet

from clicks.reports import link_totals
from clicks.selectors import links_and_clicks, with_click_totals
from links import services as link_services
from links import slugs
from links.domains import domain_for_host
from links.fields import LinkFields
from links.limits import CreationLimited, admit_creation
from links.models import Domain, Link
from links.selectors import links_visible_to
from links.validation import normalise_target
from teams import access
from teams.models import Role
from tokens.models import ApiToken

from .auth import Caller, php_int
from .output import SIMPLE

# The YOURLS release whose API this one answers as.
YOURLS_VERSION = "1.10.4"
YOURLS_DB_VERSION = "507"
STATS_MAX_LINKS = 1000
NEED_FORMAT = "Need either XML or JSON format for stats"
NOT_FOUND = "Error: short URL not found"


@dataclass(frozen=True)
class Context:
    caller: Caller
    domain: Domain  # where the request came to

    def links(self) -> QuerySet[Link]:
        return links_visible_to(self.caller.user, team=self.caller.team.pk)


def _moment(link: Link) -> str:
    return link.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _title(link: Link) -> str:
    return link.title or link.url


def _trimmed(text: str, length: int = 60, append: str = "[...]") -> str:
    return text[: length - len(append)] + append if len(text) > length else text


def _link_row(link: Link, clicks: int) -> dict:
    """A link as url-stats and stats list it."""
    return {
        "shorturl": link.short_url,
        "url": link.url,
        "title": _title(link),
        "timestamp": _moment(link),
        "ip": "",
        "clicks": str(clicks),  # a string, as YOURLS' database driver gives it
    }


# --- shorturl ---------------------------------------------------------------------


def shorturl(context: Context, params: dict[str, str]) -> dict:
    answer = {"status": "", "code": "", "message": "", "errorCode": "", "statusCode": ""}

    def fail(code: str, message: str, status: str = "400", **more) -> dict:
        answer.update(status="fail", code=code, message=message, errorCode=status, statusCode=status, **more)
        answer[SIMPLE] = more.get("shorturl", "")
        return answer

    url, keyword, title = (params.get(name, "") for name in ("url", "keyword", "title"))
    if url.strip() in ("", "http://", "https://"):
        return fail("error:nourl", "Missing or malformed URL")
    refused = _may_not_create(context.caller)
    if refused:
        return fail("error:forbidden", refused, status="403")
    try:
        url = normalise_target(url)
    except ValidationError as exc:
        if exc.code == "loop":
            return fail("error:noloop", "URL is a short URL")
        return fail("error:nourl", "Missing or malformed URL: " + " ".join(exc.messages))
    if settings.YOURLS_UNIQUE_URLS:
        existing = context.links().filter(domain=context.domain, url=url).order_by("created_at", "id").first()
        if existing is not None:
            clicks = link_totals(link_ids=[existing.pk])[existing.pk].clicks
            short = existing.short_url
            return fail(
                "error:url",
                f"{_trimmed(url)} already exists in database (short URL: {short.split('://', 1)[-1]})",
                url={**_created_row(existing), "clicks": str(clicks)},
                title=_title(existing),
                shorturl=short,
            )
    if keyword:
        try:
            slugs.validate_slug(keyword)
        except ValidationError as exc:
            return fail("error:keyword", _keyword_refusal(keyword, exc.code))
    try:
        admit_creation(owner=context.caller.user, team=context.caller.team, token=context.caller.token)
    except CreationLimited as exc:
        return fail("error:ratelimit", str(exc), status="429")
    try:
        link = link_services.link_create(
            owner=context.caller.user,
            fields=LinkFields(url=url, slug=keyword or None, title=title.strip(), domain=context.domain),
            team=context.caller.team,
        )
    except PermissionDenied as exc:
        return fail("error:forbidden", str(exc), status="403")
    except ValidationError as exc:
        return fail(*_creation_refusal(keyword, exc))
    answer.update(status="success", message=f"{_trimmed(url)} added to database", statusCode="200")
    answer.update(url=_created_row(link), title=_title(link), shorturl=link.short_url)
    answer[SIMPLE] = link.short_url
    return answer


def _may_not_create(caller: Caller) -> str | None:
    if caller.token is not None and caller.token.scope != ApiToken.Scope.WRITE:
        return "This token is read-only: make a write token to create links."
    role = access.role_in(caller.user, caller.team.pk)
    if not access.allows(role, Role.EDITOR):
        return f"To create links takes the editor role in this team; yours is {role}."
    return None


def _created_row(link: Link) -> dict:
    return {"keyword": link.slug, "url": link.url, "title": _title(link), "date": _moment(link), "ip": ""}


def _keyword_refusal(keyword: str, code: str | None) -> str:
    if code in ("reserved_slug", "unique"):
        return f"Short URL {keyword} already exists in database or is reserved"
    return (
        f"Short URL {keyword} is not a valid keyword: use {slugs.MIN_LENGTH} to {slugs.MAX_LENGTH} "
        "letters, digits, '-' and '_'."
    )


def _creation_refusal(keyword: str, exc: ValidationError) -> tuple[str, str]:
    errors = exc.error_dict if hasattr(exc, "error_dict") else {"": exc.error_list}
    for field, field_errors in errors.items():
        if field == "slug":
            return "error:keyword", _keyword_refusal(keyword, field_errors[0].code)
        messages = " ".join(message for error in field_errors for message in error.messages)
        if field == "url":
            return "error:nourl", f"Missing or malformed URL: {messages}"
        return f"error:{field or 'invalid'}", messages
    return "error:invalid", " ".join(exc.messages)


# --- expand, url-stats ------------------------------------------------------------


def _named_link(context: Context, shorturl_param: str) -> tuple[str, Link | None]:
    """The keyword and the link a `shorturl` parameter names: a short URL
    (its host names the domain) or a keyword on the request's domain."""
    domain, keyword = context.domain, shorturl_param
    if "://" in shorturl_param:
        try:
            parts = urlsplit(shorturl_param)
            domain = domain_for_host(parts.hostname)
        except (ValueError, Domain.DoesNotExist):
            return shorturl_param, None
        keyword = parts.path.lstrip("/")
    if not keyword:
        return keyword, None
    return keyword, context.links().filter(domain=domain, slug=keyword).first()


def expand(context: Context, params: dict[str, str]) -> dict:
    keyword, link = _named_link(context, params.get("shorturl", ""))
    if link is None:
        return {"keyword": keyword, SIMPLE: "not found", "message": NOT_FOUND, "errorCode": "404"}
    return {
        "keyword": link.slug,
        "shorturl": link.short_url,
        "longurl": link.url,
        "title": _title(link),
        SIMPLE: link.url,
        "message": "success",
        "statusCode": "200",
    }


def url_stats(context: Context, params: dict[str, str]) -> dict:
    _, link = _named_link(context, params.get("shorturl", ""))
    if link is None:
        return {"statusCode": "404", "message": NOT_FOUND, SIMPLE: NEED_FORMAT}
    clicks = link_totals(link_ids=[link.pk])[link.pk].clicks
    return {"statusCode": "200", "message": "success", "link": _link_row(link, clicks), SIMPLE: NEED_FORMAT}


# --- stats, db-stats, version -----------------------------------------------------

_ORDER = {
    "bottom": ("clicks", "id"),
    "last": ("-created_at", "-id"),
    "rand": ("?",),
    "random": ("?",),
}
_TOP = ("-clicks", "-id")


def _totals(context: Context) -> dict:
    totals = links_and_clicks(context.links())
    return {"total_links": totals.links, "total_clicks": totals.clicks}


def stats(context: Context, params: dict[str, str]) -> dict:
    """`filter` top (the default), bottom, last or rand; `limit` links from
    `start` (YOURLS lists none without a limit), at most STATS_MAX_LINKS."""
    limit = min(php_int(params.get("limit", "")), STATS_MAX_LINKS)
    start = max(php_int(params.get("start", "")), 0)
    answer = {}
    if limit > 0:
        order = _ORDER.get(params.get("filter", ""), _TOP)
        rows = list(with_click_totals(context.links()).order_by(*order)[start : start + limit])
        if rows:
            answer["links"] = {f"link_{n}": _link_row(link, link.clicks) for n, link in enumerate(rows, 1)}
    answer.update(stats=_totals(context), statusCode="200")
    answer.update({SIMPLE: NEED_FORMAT, "message": "success"})
    return answer


def db_stats(context: Context, params: dict[str, str]) -> dict:
    return {"db-stats": _totals(context), "statusCode": "200", SIMPLE: NEED_FORMAT, "message": "success"}


def _loosely_one(value: str | None) -> bool:
    """PHP's `$value == 1` for a request parameter."""
    try:
        return float((value or "").strip()) == 1
    except ValueError:
        return False


def version(context: Context, params: dict[str, str]) -> dict:
    answer = {"version": YOURLS_VERSION, SIMPLE: YOURLS_VERSION}
    if _loosely_one(params.get("db")):
        answer["db_version"] = YOURLS_DB_VERSION
    return answer


ACTIONS: dict[str, Callable[[Context, dict[str, str]], dict]] = {
    "shorturl": shorturl,
    "stats": stats,
    "db-stats": db_stats,
    "url-stats": url_stats,
    "expand": expand,
    "version": version,
}

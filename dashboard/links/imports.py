"""Links in and out of CSV files.

An upload is read and every row checked at once by import_upload, with the
rules link_create applies (links.services.link_validate) and one query for
the file's slugs already taken; nothing is created then. import_run_chunk
creates the valid rows afterwards in chunks, through link_bulk_create, so a
large file shows progress and a failure loses only its chunk.

export_lines writes the same columns. A cell that a spreadsheet would run
as a formula gets a leading single quote (OWASP, "CSV injection"); the
import takes that quote off again, so an export imports back as it was.
"""

import csv
import io
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, time, timezone
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.dateparse import parse_date, parse_datetime

from slingshot.text import shown
from teams import access
from teams.models import Role, Team
from teams.services import default_team

from .domains import default_domain
from .models import Domain, Link, LinkImport
from .selectors import taken_slugs
from .services import SLUG_TAKEN_MESSAGE, Outcome, link_bulk_create, link_validate
from .validation import default_host, domain_host

CSV_COLUMNS = [
    "domain",
    "slug",
    "url",
    "title",
    "tags",
    "redirect_status",
    "expires_at",
    "forward_query",
    "is_active",
]
EXPORT_COLUMNS = [*CSV_COLUMNS, "short_url", "clicks", "created_at"]
# The first characters that make a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_REPEATED_SLUG = "This slug appears on an earlier row of the file."

Errors = dict[str, list[str]]


def _looks_quoted(value: str) -> bool:
    return value.startswith("'") and value.lstrip("'").startswith(FORMULA_STARTS)


def neutralise(value: str) -> str:
    """The cell as export_lines writes it: a formula, or a value that
    unquote would change (a quote before a formula), behind one more quote."""
    return "'" + value if value.startswith(FORMULA_STARTS) or _looks_quoted(value) else value


def csv_line(cell: Callable[[Any], str] = neutralise) -> Callable[[Iterable], str]:
    """A function that writes one CSV row, each value through `cell`, and
    returns it as a line of text: for exports that stream a line at a time."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(values: Iterable) -> str:
        writer.writerow([cell(value) for value in values])
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    return line


def unquote(value: str) -> str:
    """The value people typed, from a cell neutralise wrote: one leading
    quote less when the quote precedes = + - @, a tab or a carriage return."""
    return value[1:] if _looks_quoted(value) else value


def _flag(value: str, default: bool) -> bool:
    if value == "":
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError("Use true or false.")


def _status(value: str) -> int:
    try:
        return int(value) if value else 302
    except ValueError:
        raise ValueError("Enter a whole number.") from None


def _moment(value: str) -> datetime | None:
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


def domains_by_host() -> dict[str, Domain]:
    """Every domain by host, and the default domain under "" (an empty cell)."""
    domains = {domain.host: domain for domain in Domain.objects.all()}
    domains[""] = domains.get(default_host()) or default_domain()
    return domains


def _domain(value: str, domains: dict[str, Domain]) -> Domain:
    try:
        host = domain_host(value) if value else ""
        return domains["" if host == default_host() else host]
    except (ValidationError, KeyError):
        raise ValueError(f"No such domain: {shown(value)}.") from None


def row_arguments(fields: dict[str, str], domains: dict[str, Domain]) -> tuple[dict[str, Any] | None, Errors]:
    """link_create's arguments (but the owner) from a row's cells, as typed
    values; or, when a cell cannot be read as its type, the row's errors.
    `domains` is domains_by_host()."""
    errors: Errors = {}
    if not fields["url"]:
        errors["url"] = ["This field is required."]
    try:
        domain = _domain(fields.get("domain", ""), domains)
    except ValueError as exc:
        errors["domain"] = [str(exc)]
        domain = None
    arguments: dict[str, Any] = {
        "domain": domain,
        "url": fields["url"],
        "slug": fields["slug"] or None,
        "title": fields["title"],
        "tags": [tag.strip() for tag in fields["tags"].split(",") if tag.strip()],
    }
    readers = {
        "redirect_status": _status,
        "expires_at": _moment,
        "forward_query": lambda value: _flag(value, False),
        "is_active": lambda value: _flag(value, True),
    }
    for name, read in readers.items():
        try:
            arguments[name] = read(fields[name])
        except ValueError as exc:
            errors.setdefault(name, [str(exc)])
    return (None, errors) if errors else (arguments, {})


def _validation_errors(arguments: dict[str, Any]) -> Errors:
    try:
        link_validate(**arguments)
    except ValidationError as exc:
        return exc.message_dict
    return {}


def import_upload(*, owner: AbstractBaseUser, filename: str, content: bytes, team: Team | None = None) -> LinkImport:
    """Reads and checks every row, for links in `team` (by default
    teams.services.default_team), in which the owner must be an editor
    (PermissionDenied); creates no link. Raises ValidationError for a file
    that is not a CSV of links at all, or has more than WEB_IMPORT_MAX_ROWS
    rows."""
    team = team or default_team(owner)
    access.require(owner, team.pk, Role.EDITOR, to="import links")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:  # a surrogate's bytes (ED A0 80) among them: no text holds one
        raise ValidationError(
            "The file is not UTF-8 text: line %(line)d is not.",
            code="encoding",
            params={"line": content.count(b"\n", 0, exc.start) + 1},
        ) from None
    if "\x00" in text:  # PostgreSQL text holds none; a spreadsheet's UTF-16 "Unicode text" has many
        raise ValidationError("The file holds null characters: save it as CSV text in UTF-8.", code="null")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = [name.strip().lower() for name in reader.fieldnames or []]
        if "url" not in header:
            raise ValidationError("The first row must name the columns, one of them `url`.", code="header")
        if "password" in header:
            # Never a link made without the password its row gives; nor one
            # kept in clear with the upload until the rows are created.
            raise ValidationError(
                "The file has a password column, and passwords are not imported: remove the column, import "
                "the file, then set each password on its link's Edit page.",
                code="password",
            )
        reader.fieldnames = header
        domains = domains_by_host()
        rows, slugs = [], []
        for record in reader:
            if len(rows) >= settings.WEB_IMPORT_MAX_ROWS:
                raise ValidationError(
                    "More than %(max)d rows: split the file.",
                    code="too_many",
                    params={"max": settings.WEB_IMPORT_MAX_ROWS},
                )
            fields = {name: unquote((record.get(name) or "").strip()) for name in CSV_COLUMNS}
            arguments, errors = row_arguments(fields, domains)
            errors = errors or _validation_errors(arguments)
            rows.append({"line": reader.line_num, "fields": fields, "errors": errors})
            slugs.append(None if errors or not arguments["slug"] else (arguments["domain"].pk, arguments["slug"]))
    except csv.Error as exc:
        raise ValidationError(
            "Line %(line)d is not valid CSV: %(error)s", code="csv", params={"line": reader.line_num, "error": exc}
        ) from None
    if not rows:
        raise ValidationError("The file has no rows below its header.", code="empty")

    taken, claimed = taken_slugs(slugs=(slug for slug in slugs if slug)), set()  # (domain id, slug) pairs
    for row, slug in zip(rows, slugs, strict=True):
        if slug in taken:
            row["errors"] = {"slug": [SLUG_TAKEN_MESSAGE]}
        elif slug in claimed:
            row["errors"] = {"slug": [_REPEATED_SLUG]}
        elif slug:
            claimed.add(slug)
    return LinkImport.objects.create(owner=owner, team=team, filename=filename[:255], rows=rows)


@transaction.atomic
def import_run_chunk(*, link_import: LinkImport, size: int | None = None) -> LinkImport:
    """Creates the links of the next `size` rows (WEB_IMPORT_CHUNK_ROWS) in
    one transaction, with the import locked so a second request (a double
    click) waits and goes on from where this one stopped. A row refused now
    (its slug taken since the upload, say) gets its errors; once its owner
    is no longer an editor of its team, every row does (link_bulk_create)."""
    link_import = LinkImport.objects.select_for_update().get(pk=link_import.pk)
    end = min(link_import.total, link_import.position + (size or settings.WEB_IMPORT_CHUNK_ROWS))
    pending, items = [], []
    domains = domains_by_host()
    for row in link_import.rows[link_import.position : end]:
        if row["errors"]:
            continue
        arguments, row["errors"] = row_arguments(row["fields"], domains)
        if arguments is not None:
            pending.append(row)
            items.append(arguments)
    for row, result in zip(
        pending, link_bulk_create(owner=link_import.owner, team=link_import.team, items=items), strict=True
    ):
        row["errors"] = result.errors
        link_import.created += result.outcome is Outcome.CREATED
    link_import.position = end
    link_import.save(update_fields=["rows", "position", "created"])
    return link_import


def export_lines(links: Iterable[Link]) -> Iterator[str]:
    """The CSV of these links, a line at a time, header first: CSV_COLUMNS,
    then the short URL, all-time clicks (the `clicks` that
    links.selectors.with_click_totals annotates) and creation time."""
    line = csv_line()
    yield line(EXPORT_COLUMNS)
    for link in links:
        yield line(
            [
                link.domain.host,
                link.slug,
                link.url,
                link.title,
                ",".join(link.tags),
                str(link.redirect_status),
                link.expires_at.isoformat() if link.expires_at else "",
                str(link.forward_query).lower(),
                str(link.is_active).lower(),
                link.short_url,
                str(link.clicks),
                link.created_at.isoformat(),
            ]
        )

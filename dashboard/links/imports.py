"""Links in and out of CSV files.

An upload is read and every row checked at once by import_upload, with the
rules link_create applies (links.services.link_validate) and one query for
the file's slugs already taken; nothing is created then. import_run_chunk
creates the valid rows afterwards in chunks, through link_bulk_create, so a
large file shows progress and a failure loses only its chunk.

export_lines writes the same columns, every option a person sets but the
password (links/fields.py), each cell as slingshot.csv_text writes it, so
that an export imports back as it was.
"""

import csv
import io
from collections.abc import Iterable, Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from slingshot.csv_text import csv_line, unquote
from slingshot.text import shown
from teams import access
from teams.models import Role, Team
from teams.services import default_team

from .domains import default_domain
from .fields import CSV_OPTIONS, OPTIONS, LinkFields
from .models import Domain, Link, LinkImport
from .selectors import taken_slugs
from .services import SLUG_TAKEN_MESSAGE, Outcome, link_bulk_create, link_validate
from .validation import default_host, domain_host

# The columns of a links CSV: each option with a cell (links/fields.py), and
# the domain by its host; an export adds what a link has that no one sets.
COLUMNS = sorted(
    (option for option in OPTIONS if option.csv or option.name == "domain"),
    key=lambda option: ("domain", "slug", "url").index(option.name) if option.name in ("domain", "slug", "url") else 3,
)  # where a link is, first, as exports have always begun
CSV_COLUMNS = [option.name for option in COLUMNS]
EXPORT_COLUMNS = [*CSV_COLUMNS, "short_url", "clicks", "created_at"]
_REPEATED_SLUG = "This slug appears on an earlier row of the file."
EXPIRY_PASSED = "This time has passed: the short URL would answer 410 Gone from the start."

Errors = dict[str, list[str]]


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


def row_arguments(fields: dict[str, str], domains: dict[str, Domain]) -> tuple[LinkFields | None, Errors]:
    """The LinkFields of a row's cells, each read as its option's cell
    (links/fields.py); or, when a cell cannot be read, the row's errors.
    `domains` is domains_by_host()."""
    errors: Errors = {}
    if not fields["url"]:
        errors["url"] = ["This field is required."]
    values: dict[str, Any] = {}
    try:
        values["domain"] = _domain(fields.get("domain", ""), domains)
    except ValueError as exc:
        errors["domain"] = [str(exc)]
    for option in CSV_OPTIONS:
        try:
            values[option.name] = option.csv.read(fields.get(option.name, ""))
        except ValueError as exc:
            errors.setdefault(option.name, [str(exc)])
    return (None, errors) if errors else (LinkFields(**values), {})


def _validation_errors(link_fields: LinkFields) -> Errors:
    try:
        link_validate(link_fields)
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
            row = {"line": reader.line_num, "fields": fields, "errors": errors}
            if not errors and arguments.expires_at and arguments.expires_at <= timezone.now():
                row["warnings"] = {"expires_at": [EXPIRY_PASSED]}  # created only if confirmed (import_run_chunk)
            rows.append(row)
            slugs.append(None if errors or not arguments.slug else (arguments.domain.pk, arguments.slug))
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
def import_run_chunk(*, link_import: LinkImport, size: int | None = None, expired_ok: bool = False) -> LinkImport:
    """Creates the links of the next `size` rows (WEB_IMPORT_CHUNK_ROWS) in
    one transaction, with the import locked so a second request (a double
    click) waits and goes on from where this one stopped. A row refused now
    (its slug taken since the upload, say) gets its errors; once its owner
    is no longer an editor of its team, every row does (link_bulk_create).
    A row whose expiry had passed at the upload (its warnings) is created
    expired when `expired_ok`, and refused otherwise."""
    link_import = LinkImport.objects.select_for_update().get(pk=link_import.pk)
    end = min(link_import.total, link_import.position + (size or settings.WEB_IMPORT_CHUNK_ROWS))
    pending, items = [], []
    domains = domains_by_host()
    for row in link_import.rows[link_import.position : end]:
        if row["errors"]:
            continue
        if row.get("warnings") and not expired_ok:
            row["errors"] = row["warnings"]
            continue
        arguments, row["errors"] = row_arguments(row["fields"], domains)
        if arguments is not None:
            pending.append(row)
            items.append((arguments, None))
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
    clicks.selectors.with_click_totals annotates) and creation time."""
    line = csv_line()
    yield line(EXPORT_COLUMNS)
    for link in links:
        yield line(
            [
                *(
                    option.csv.write(getattr(link, option.name)) if option.csv else link.domain.host
                    for option in COLUMNS
                ),
                link.short_url,
                str(link.clicks),
                link.created_at.isoformat(),
            ]
        )

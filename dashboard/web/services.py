"""Bulk import of links from CSV: every row is checked when the file is
uploaded (a dry run of link_create, rolled back, so the rules are the
service's own), then the valid rows are created in chunks, so a large file
shows progress and a failure loses only the chunk it happened in."""
import csv
import io

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from links.services import link_create

from .forms import LinkForm
from links.models import LinkImport

CSV_COLUMNS = ["slug", "url", "title", "tags", "redirect_status", "expires_at", "forward_query", "is_active"]
_DEFAULTS = {"redirect_status": "302", "is_active": "true"}
_FALSE = {"", "0", "false", "no", "off"}


class _DryRun(Exception):
    pass


def _row_arguments(fields: dict[str, str]) -> tuple[dict | None, dict[str, list[str]]]:
    """link_create's arguments for a CSV row, or the row's errors."""
    data = {name: value for name, value in fields.items() if value != ""}
    data = {**_DEFAULTS, **data}
    for flag in ("forward_query", "is_active"):
        data[flag] = "on" if data.get(flag, "").strip().lower() not in _FALSE else ""
    form = LinkForm(data)
    if not form.is_valid():
        return None, {field: list(messages) for field, messages in form.errors.items()}
    return form.service_arguments(), {}


def _check(owner: AbstractBaseUser, arguments: dict) -> dict[str, list[str]]:
    try:
        with transaction.atomic():
            link_create(owner=owner, **arguments)
            raise _DryRun
    except _DryRun:
        return {}
    except ValidationError as exc:
        return exc.message_dict


def import_upload(*, owner: AbstractBaseUser, filename: str, content: bytes) -> LinkImport:
    """Reads and checks every row. Raises ValidationError for a file that is
    not a CSV of links at all."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValidationError("The file is not UTF-8 text.", code="encoding") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [name.strip().lower() for name in reader.fieldnames or []]
    if "url" not in header:
        raise ValidationError("The first row must name the columns, one of them `url`.", code="header")
    reader.fieldnames = header
    rows, seen_slugs = [], set()
    try:
        for record in reader:
            if len(rows) >= settings.WEB_IMPORT_MAX_ROWS:
                raise ValidationError("More than %(max)d rows: split the file.", code="too_many",
                                      params={"max": settings.WEB_IMPORT_MAX_ROWS})
            fields = {name: (record.get(name) or "").strip() for name in CSV_COLUMNS}
            arguments, errors = _row_arguments(fields)
            if arguments is not None:
                errors = _check(owner, arguments)
                slug = (arguments["slug"] or "").lower()
                if not errors and slug and slug in seen_slugs:
                    errors = {"slug": ["This slug appears on an earlier row of the file."]}
                seen_slugs.add(slug)
            rows.append({"line": reader.line_num, "fields": fields, "errors": errors})
    except csv.Error as exc:
        raise ValidationError("Line %(line)d is not valid CSV: %(error)s", code="csv",
                              params={"line": reader.line_num, "error": exc}) from None
    if not rows:
        raise ValidationError("The file has no rows below its header.", code="empty")
    return LinkImport.objects.create(owner=owner, filename=filename[:255], rows=rows)


@transaction.atomic
def import_run_chunk(*, link_import: LinkImport, size: int | None = None) -> LinkImport:
    """Creates the links of the next `size` rows in one transaction, with the
    import locked so a second request (a double click) waits and goes on
    from where this one stopped. A row refused now (its slug taken since the
    upload, say) gets its errors."""
    link_import = LinkImport.objects.select_for_update().get(pk=link_import.pk)
    end = min(link_import.total, link_import.position + (size or settings.WEB_IMPORT_CHUNK_ROWS))
    for row in link_import.rows[link_import.position:end]:
        if row["errors"]:
            continue
        arguments, errors = _row_arguments(row["fields"])
        if arguments is not None:
            try:
                link_create(owner=link_import.owner, **arguments)
            except ValidationError as exc:
                errors = exc.message_dict
        row["errors"] = errors
        link_import.created += not errors
    link_import.position = end
    link_import.save(update_fields=["rows", "position", "created"])
    return link_import

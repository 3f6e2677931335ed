"""Slingshot's own links CSV (links/imports.py export_lines): every option
with a cell (links/fields.py), the domain by its host, and the export's
short URL, all-time clicks and creation time.

Each option is read back by its own cell (fields.Cell.read), so an export
imports as it was. A row names its link by domain and slug (by its cells
when it has no slug), so a second run finds what the first made. A domain
not served here is taken for the other Slingshot's default domain: the row
goes into the domain the import was given. The clicks column starts a
visit limit's counter where the export left it; passwords are not in the
file (an export never holds them), as the Import page says."""

import csv
import io
from collections.abc import Iterator
from hashlib import sha256

from links.fields import CSV_OPTIONS
from links.imports import CSV_COLUMNS
from slingshot.csv_text import unquote

from ..files import Opener
from .base import Source, SourceError, SourceLink, moment


class SlingshotCsvSource(Source):
    def __init__(self, *, csv_file: Opener, name: str = ""):
        self.open = csv_file
        self.key = f"csv {name}".strip()

    def links(self) -> Iterator[SourceLink]:
        with self.open() as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="strict", newline="")
            reader = csv.DictReader(text)
            try:
                header = [name.strip().lower() for name in reader.fieldnames or []]
                if "url" not in header:
                    raise SourceError("The first row must name the columns, one of them `url`.")
                if "password" in header:
                    raise SourceError("The file has a password column, and passwords are not imported: remove it.")
                reader.fieldnames = header
                for record in reader:
                    yield self._link(reader.line_num, record)
            except UnicodeDecodeError:
                raise SourceError("The file is not UTF-8 text.") from None
            except csv.Error as exc:
                raise SourceError(f"Line {reader.line_num} is not valid CSV: {exc}") from None

    @staticmethod
    def _link(line: int, record: dict) -> SourceLink:
        cells = {name: unquote((record.get(name) or "").strip()) for name in [*CSV_COLUMNS, "clicks", "created_at"]}
        options, errors = {}, {}
        for option in CSV_OPTIONS:
            try:
                options[option.name] = option.csv.read(cells[option.name])
            except ValueError as exc:
                errors[option.name] = [str(exc)]
        url, slug = options.pop("url"), options.pop("slug") or ""
        identity = (
            f"{cells['domain']}/{slug}" if slug else "row " + sha256("\x1f".join(cells.values()).encode()).hexdigest()
        )
        try:
            created = moment(cells["created_at"])
        except SourceError as exc:
            created, errors["created_at"] = None, [str(exc)]
        return SourceLink(
            external_id=identity,
            url=url,
            slug=slug or None,
            host=cells["domain"] or None,
            host_or_default=True,
            options=options,
            created_at=created,
            visits=int(cells["clicks"]) if cells["clicks"].isdigit() else 0,
            errors=errors if url else {**errors, "url": ["This field is required."]},
        )

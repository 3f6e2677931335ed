"""A YOURLS database: a `mysqldump` of its tables (SQL), or its yourls_url
and yourls_log tables as CSV, in the shapes of YOURLS'
includes/functions-install.php:

    yourls_url (keyword, url, title, timestamp, ip, clicks)
    yourls_log (click_id, click_time, shorturl, referrer, user_agent, ip_address, country_code)

Links with their titles and creation times; every logged click with its
time (UTC, as YOURLS writes it), referrer ('direct': none), user agent,
address and country. The dump is read twice, in a stream, once for the
links and once for the log, so its size is not held in memory."""

import csv
import io
import re
from collections.abc import Callable, Iterator
from datetime import datetime

from ..files import Opener
from ..history import Visit
from .base import Source, SourceError, SourceLink, millis, moment

URL_COLUMNS = ("keyword", "url", "title", "timestamp", "ip", "clicks")
LOG_COLUMNS = ("click_id", "click_time", "shorturl", "referrer", "user_agent", "ip_address", "country_code")

# A value of an INSERT's rows: a quoted string (group 1, its escapes left
# in; the loop unrolled, which the regex engine runs many times faster than
# an alternation per character) or a bare NULL or number (group 2). What
# lies between values (parentheses, commas) matches neither and is skipped,
# so that a line's values come in order and make rows of the table's width.
_VALUE = re.compile(r"'([^'\\]*(?:(?:\\.|'')[^'\\]*)*)'|(NULL|[-+0-9.eE]+)")
_ESCAPE = re.compile(r"\\(.)|''", re.S)
_ESCAPED = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}
_INSERT = re.compile(r"INSERT\s+(?:IGNORE\s+)?INTO\s+`?(\w+)`?\s*(?:\(([^)]*)\))?\s*VALUES\s*", re.I)
_CREATE = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?\s*\(", re.I)
_COLUMN = re.compile(r"^\s*`(\w+)`")


def _unescape(match: re.Match) -> str:
    char = match[1]
    return "'" if char is None else _ESCAPED.get(char, char)


def _value(quoted: str, bare: str) -> str | None:
    if bare:
        return None if bare == "NULL" else bare
    return _ESCAPE.sub(_unescape, quoted) if "\\" in quoted or "''" in quoted else quoted


def dump_rows(open_dump: Opener, table: str, default_columns: tuple[str, ...]) -> Iterator[dict[str, str | None]]:
    """The rows of `table` in a mysqldump, each by column name: from the
    INSERT's column list, else from the dump's CREATE TABLE, else the
    default order."""
    columns = list(default_columns)
    creating = False
    with open_dump() as raw:
        for data in raw:
            line = data.decode("utf-8", "replace")
            if creating:
                if line.lstrip().startswith(")"):
                    creating = False
                elif name := _COLUMN.match(line):
                    columns.append(name[1])
                continue
            if (created := _CREATE.match(line)) and created[1] == table:
                creating, columns = True, []
                continue
            insert = _INSERT.match(line)
            if not insert or insert[1] != table:
                continue
            names = [name.strip(" `") for name in insert[2].split(",")] if insert[2] else columns
            # Most values are plain quoted strings: kept as they are without a call.
            values = [
                quoted if not bare and "\\" not in quoted and "''" not in quoted else _value(quoted, bare)
                for quoted, bare in _VALUE.findall(line, insert.end())
            ]
            width = len(names)
            if len(values) % width:
                raise SourceError(f"An INSERT into {table} holds {len(values)} values, not rows of {width}.")
            for start in range(0, len(values), width):
                yield dict(zip(names, values[start : start + width], strict=True))


def csv_rows(open_csv: Opener, columns: tuple[str, ...]) -> Iterator[dict[str, str | None]]:
    """The rows of a table exported as CSV, with a header naming its
    columns (phpMyAdmin's, MySQL Workbench's) or in the table's own order."""
    with open_csv() as raw:
        reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=""))
        names = list(columns)
        for number, row in enumerate(reader):
            if number == 0 and columns[0] in [cell.strip().lower() for cell in row]:
                names = [cell.strip().lower() for cell in row]
                continue
            if len(row) != len(names):
                raise SourceError(f"Line {number + 1} of the CSV has {len(row)} cells, not {len(names)}.")
            yield {name: (None if value == "NULL" else value) for name, value in zip(names, row, strict=True)}


class YourlsSource(Source):
    lists_visits = True

    def __init__(
        self,
        *,
        dump: Opener | None = None,
        url_csv: Opener | None = None,
        log_csv: Opener | None = None,
        prefix: str = "yourls_",
        name: str = "",
    ):
        if dump is None and url_csv is None:
            raise SourceError("YOURLS needs a mysqldump (--sql) or its yourls_url table as CSV (--url-csv).")
        self.key = f"yourls {name}".strip()
        if dump is not None:
            self._urls = lambda: dump_rows(dump, f"{prefix}url", URL_COLUMNS)
            self._log = lambda: dump_rows(dump, f"{prefix}log", LOG_COLUMNS)
        else:
            self._urls = lambda: csv_rows(url_csv, URL_COLUMNS)
            self._log = (lambda: csv_rows(log_csv, LOG_COLUMNS)) if log_csv else (lambda: iter(()))

    def links(self) -> Iterator[SourceLink]:
        found = False
        for row in self._urls():
            found = True
            keyword = row.get("keyword") or ""
            yield SourceLink(
                external_id=keyword,
                url=row.get("url") or "",
                slug=keyword,
                options={"title": row.get("title") or ""},
                created_at=_time(row.get("timestamp")),
                visits=int(row.get("clicks") or 0),
            )
        if not found:
            raise SourceError("The YOURLS data holds no links: is it a dump of yourls_url (see --table-prefix)?")

    def visits(self, *, wanted: Callable[[str], bool], skip: int = 0) -> Iterator[tuple[str, Visit]]:
        for row in self._log():
            keyword = row.get("shorturl") or ""
            if not wanted(keyword):
                self.left_out += 1
                continue
            if skip:
                skip -= 1
                continue
            referer = row.get("referrer") or ""
            when = row.get("click_time") or ""
            yield (
                keyword,
                Visit(
                    key=f"{row.get('click_id')}\x1f{when}",
                    ms=_ms(when),
                    ip=row.get("ip_address") or "",
                    user_agent=row.get("user_agent") or "",
                    referer="" if referer == "direct" else referer,
                    country=row.get("country_code") or "",
                ),
            )


_DAYS: dict[str, int] = {}


def _ms(value: str) -> int:
    """Unix milliseconds of a MySQL datetime 'YYYY-MM-DD HH:MM:SS' in UTC, as
    YOURLS writes its log; 0 for none ('0000-00-00 ...'), which the runner
    leaves out. A day's start is worked out once."""
    day = _DAYS.get(value[:10])
    if day is None:
        at = _time(value[:10])
        day = _DAYS[value[:10]] = millis(at) if at else -1
        if len(_DAYS) > 100_000:
            _DAYS.clear()
    if day < 0:
        return 0
    try:
        return day + (int(value[11:13]) * 3600 + int(value[14:16]) * 60 + int(value[17:19])) * 1000
    except ValueError:
        at = _time(value)
        return millis(at) if at else 0


def _time(value: str | None) -> datetime | None:
    """A MySQL datetime as YOURLS writes it, in UTC ('0000-00-00 00:00:00': none)."""
    if not value or value.startswith("0000"):
        return None
    return moment(value)

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


Row = tuple[str | None, ...]


def _ordered(names: list[str], columns: tuple[str, ...]) -> list[int] | None:
    """Where each of `columns` is among `names` (-1: absent); None when
    they are the same, in the same order."""
    if names == list(columns):
        return None
    return [names.index(column) if column in names else -1 for column in columns]


def dump_rows(open_dump: Opener, table: str, columns: tuple[str, ...]) -> Iterator[Row]:
    """The rows of `table` in a mysqldump, each a tuple of `columns` (None
    for a NULL or a column the table lacks). Which column a value is comes
    from the INSERT's column list, else from the dump's CREATE TABLE, else
    `columns`' order."""
    names = list(columns)
    creating = False
    with open_dump() as raw:
        for data in raw:
            line = data.decode("utf-8", "replace")
            if creating:
                if line.lstrip().startswith(")"):
                    creating = False
                elif name := _COLUMN.match(line):
                    names.append(name[1])
                continue
            if (created := _CREATE.match(line)) and created[1] == table:
                creating, names = True, []
                continue
            insert = _INSERT.match(line)
            if not insert or insert[1] != table:
                continue
            given = [name.strip(" `") for name in insert[2].split(",")] if insert[2] else names
            found = _VALUE.findall(line, insert.end())
            # A bare NULL is None; most values are quoted strings without an escape, taken as they are.
            values = [
                (None if bare == "NULL" else bare)
                if bare
                else (quoted if "\\" not in quoted and "''" not in quoted else _ESCAPE.sub(_unescape, quoted))
                for quoted, bare in found
            ]
            width = len(given)
            if len(values) % width:
                raise SourceError(f"An INSERT into {table} holds {len(values)} values, not rows of {width}.")
            rows = zip(*[iter(values)] * width, strict=True)
            places = _ordered(given, columns)
            if places is None:
                yield from rows
            else:
                yield from (tuple(row[place] if place >= 0 else None for place in places) for row in rows)


def csv_rows(open_csv: Opener, columns: tuple[str, ...]) -> Iterator[Row]:
    """The rows of a table exported as CSV, each a tuple of `columns`, with
    a header naming its columns (phpMyAdmin's, MySQL Workbench's) or in the
    table's own order."""
    with open_csv() as raw:
        reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=""))
        places = None
        width = len(columns)
        for number, row in enumerate(reader):
            if number == 0 and columns[0] in [cell.strip().lower() for cell in row]:
                names = [cell.strip().lower() for cell in row]
                places, width = _ordered(names, columns), len(names)
                continue
            if len(row) != width:
                raise SourceError(f"Line {number + 1} of the CSV has {len(row)} cells, not {width}.")
            if places is not None:
                row = [row[place] if place >= 0 else "NULL" for place in places]
            yield tuple(None if value == "NULL" else value for value in row)


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
        for keyword, url, title, timestamp, _, clicks in self._urls():
            found = True
            yield SourceLink(
                external_id=keyword or "",
                url=url or "",
                slug=keyword or "",
                options={"title": title or ""},
                created_at=_time(timestamp),
                visits=int(clicks or 0),
            )
        if not found:
            raise SourceError("The YOURLS data holds no links: is it a dump of yourls_url (see --table-prefix)?")

    def visits(self, *, wanted: Callable[[str], bool], skip: int = 0) -> Iterator[tuple[str, Visit]]:
        for click_id, when, keyword, referer, agent, address, country in self._log():
            if not wanted(keyword):
                self.left_out += 1
                continue
            if skip:
                skip -= 1
                continue
            when = when or ""
            yield (
                keyword,
                Visit(
                    f"{click_id}\x1f{when}",
                    _ms(when),
                    address or "",
                    agent or "",
                    "" if referer == "direct" else referer or "",
                    country or "",
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

"""A YOURLS database: a dump of its tables (SQL, as the MySQL or MariaDB it
runs on writes it: importers/sources/sqldump.py), or its yourls_url and
yourls_log tables as CSV, in the shapes of YOURLS'
includes/functions-install.php:

    yourls_url (keyword, url, title, timestamp, ip, clicks)
    yourls_log (click_id, click_time, shorturl, referrer, user_agent, ip_address, country_code)

Links with their titles and creation times; every logged click with its
time (UTC, as YOURLS writes it), referrer ('direct': none), user agent,
address and country. The dump is read twice, in a stream, once for the
links and once for the log, so its size is not held in memory."""

import csv
import io
from collections.abc import Callable, Iterator
from datetime import datetime

from ..files import Opener
from ..history import Visit
from .base import Source, SourceError, SourceLink, millis, moment
from .sqldump import Row, SqlDump, places

URL_COLUMNS = ("keyword", "url", "title", "timestamp", "ip", "clicks")
LOG_COLUMNS = ("click_id", "click_time", "shorturl", "referrer", "user_agent", "ip_address", "country_code")


def dump_rows(open_dump: Opener, table: str, columns: tuple[str, ...]) -> Iterator[Row]:
    """The rows of `table` in a dump (importers/sources/sqldump.py), each a tuple of `columns`."""
    return SqlDump(open_dump).rows(table, columns)


def csv_rows(open_csv: Opener, columns: tuple[str, ...]) -> Iterator[Row]:
    """The rows of a table exported as CSV, each a tuple of `columns`, with
    a header naming its columns (phpMyAdmin's, MySQL Workbench's) or in the
    table's own order."""
    with open_csv() as raw:
        reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=""))
        where = None
        width = len(columns)
        for number, row in enumerate(reader):
            if number == 0 and columns[0] in [cell.strip().lower() for cell in row]:
                names = [cell.strip().lower() for cell in row]
                where, width = places(names, columns), len(names)
                continue
            if len(row) != width:
                raise SourceError(f"Line {number + 1} of the CSV has {len(row)} cells, not {width}.")
            if where is not None:
                row = [row[place] if place >= 0 else "NULL" for place in where]
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
            raise SourceError(
                "YOURLS needs a dump of its database (SQL), or its yourls_url table as CSV.", setting="sql"
            )
        self.key = f"yourls {name}".strip()
        self.prefix = prefix
        self.dump = SqlDump(dump) if dump is not None else None
        if self.dump is not None:
            self._urls = lambda: self.dump.rows(f"{prefix}url", URL_COLUMNS)
            self._log = lambda: self.dump.rows(f"{prefix}log", LOG_COLUMNS)
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
            raise self._no_links()

    def _no_links(self) -> SourceError:
        """What the data holds instead of YOURLS' links, and what to do."""
        table = f"{self.prefix}url"
        if self.dump is None:
            return SourceError(f"The CSV of {table} holds no rows.")
        tables = list(self.dump.tables)
        if table.lower() in (name.lower() for name in tables):
            return SourceError(f"The dump's table {table} holds no rows: is it a dump of the tables' structure only?")
        if not tables:
            return SourceError(
                "The file holds no table (no CREATE TABLE, no INSERT): is it a dump (SQL) of YOURLS' database?"
            )
        named = ", ".join(tables[:12]) + (f" and {len(tables) - 12} more" if len(tables) > 12 else "")
        # YOURLS names its tables PREFIX + url, log and options.
        prefixes = sorted({name[:-3] for name in tables if name.lower().endswith("url") and len(name) > 3})
        if len(prefixes) == 1:
            return SourceError(
                f"The dump holds no table {table}, but it holds {named}: YOURLS' tables there begin with "
                f'"{prefixes[0]}". Set "Table prefix" to {prefixes[0]} and import it again.',
                setting="table_prefix",
                value=prefixes[0],
            )
        if prefixes:
            return SourceError(
                f'The dump holds no table {table}, but it holds {named}: set "Table prefix" to the beginning of '
                f"the names of the YOURLS tables to import ({', '.join(prefixes)}).",
                setting="table_prefix",
            )
        return SourceError(f"The dump holds no table {table}, only {named}: is it a dump of YOURLS' database?")

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

"""The rows of a table in a MySQL or MariaDB dump (SQL), read as a stream,
in time linear in the dump's size whatever it holds.

Read: what `mysqldump` (MySQL 5.7, 8) and `mariadb-dump` (MariaDB 10, 11)
write with their defaults and common options (docs/importing.md names
them), and dumps of phpMyAdmin's shape: INSERT [IGNORE] and REPLACE, with
or without a column list, a row or many rows a statement, on one line or a
row a line; names in backticks, double quotes or bare; comments of every
kind (MariaDB's sandbox-mode line among them); strings with MySQL's
escapes, a character set's introducer (MySQL 8's `_binary '...'`), X'...'
and 0x... (`--hex-blob`), decoded as UTF-8 text; CRLF line ends; the
dump compressed with gzip, bzip2 or xz.

How it stays linear: the text is kept in a window (`_Window`) that moves on
as it is read, never the whole dump. Every pattern (importers/sources/
sqlgrammar.py) is matched where the reading stands (never searched for),
and its repetitions are possessive (`*+`, `++`), so that no character is
read more than a bounded number of times. A token the window's end cuts is
matched again once more of the dump is in, and the window then grows at
least twofold, so that a long token costs linear time too.

A row is read in one match of a pattern of the table's width
(`sqlgrammar.row_pattern`) where it can be; otherwise (a row across the
window's end, comments between its values, a row of another width) value
by value (`SqlDump.slow_row`), which says on which line the dump could not
be read and what was expected there."""

import bz2
import codecs
import gzip
import lzma
import re
from collections.abc import Iterator
from typing import BinaryIO

from ..files import Opener
from . import sqlgrammar as sql
from .base import SourceError

Row = tuple[str | None, ...]

CHUNK = 1 << 20  # characters read at a time
WINDOW = 1 << 16  # held ahead of a statement's start: its head (INSERT INTO name (columns) VALUES) fits
TOKEN_MAX = 1 << 26  # the longest string read (64 Mi characters): a longer one is a dump cut short, or not SQL


def places(names: list[str], columns: tuple[str, ...] | list[str]) -> list[int] | None:
    """Where each of `columns` is among `names` (-1: absent); None when
    they are the same, in the same order."""
    if names == list(columns):
        return None
    return [names.index(column) if column in names else -1 for column in columns]


def _uncompressed(raw: BinaryIO) -> BinaryIO:
    """The dump itself, read through gzip, bzip2 or xz when it is compressed
    with one of them (as `mysqldump | gzip` writes it)."""
    if hasattr(raw, "peek"):
        head = raw.peek(6)[:6]
    else:
        head = raw.read(6)
        raw.seek(0)
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if head.startswith(b"BZh"):
        return bz2.BZ2File(raw)
    if head.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(raw)
    if head.startswith((b"PK\x03\x04", b"\x28\xb5\x2f\xfd")):
        raise SourceError("The file is a zip or zstd archive: give the dump itself (.sql), or compressed with gzip.")
    return raw


class _Window:
    """The dump's text from where it is being read (`pos`), a window of it
    in memory; `more` reads on, dropping what was read (all before `pos`,
    or before `mark` while one is set)."""

    def __init__(self, raw: BinaryIO):
        self.raw = _uncompressed(raw)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.text, self.pos, self.mark = "", 0, None
        self.line = 1  # of text[0]
        self.ended = False
        self.more()
        if self.text.startswith("\ufeff"):
            self.pos = 1

    def more(self) -> bool:
        """Reads on; False at the end of the dump. The part kept grows at
        least twofold, so that a token read again each time costs linear time."""
        if self.ended:
            return False
        cut = self.pos if self.mark is None else self.mark
        kept = self.text[cut:]
        if len(kept) > TOKEN_MAX:
            raise SourceError(
                f"Line {self.line_at(cut)} of the dump could not be read: a statement or string goes on for more "
                f"than {TOKEN_MAX >> 20} Mi characters from {self.excerpt(cut)}: is the dump cut short?"
            )
        self.line += self.text.count("\n", 0, cut)
        data = self.raw.read(max(CHUNK, len(kept)))
        self.ended = not data
        self.text = kept + self.decoder.decode(data, final=self.ended)
        self.pos -= cut
        if self.mark is not None:
            self.mark -= cut
        return True

    def need(self, size: int) -> None:
        """At least `size` characters ahead, unless the dump ends before."""
        while len(self.text) - self.pos < size and self.more():
            pass

    def at_end(self) -> bool:
        return self.ended and self.pos >= len(self.text)

    def line_at(self, pos: int) -> int:
        return self.line + self.text.count("\n", 0, pos)

    def excerpt(self, pos: int) -> str:
        text = self.text[pos : pos + 60]
        return f"«{' '.join(text.split())}{'…' if len(self.text) > pos + 60 else ''}»" if text else "the dump's end"

    def gap(self) -> None:
        """Past the whitespace and comments ahead."""
        while True:
            self.need(WINDOW)
            self.pos = sql.GAP.match(self.text, self.pos).end()
            if self.ended or len(self.text) - self.pos >= WINDOW:
                return

    def token(self, pattern: re.Pattern) -> re.Match | None:
        """`pattern` matched here (None: it does not match), with at least
        two characters after it unless the dump ends: a token the window
        cuts, or `''` or `--` across its end, is matched again with more."""
        while True:
            self.need(WINDOW)
            match = pattern.match(self.text, self.pos)
            if match is None or self.ended or len(self.text) - match.end() >= 2:
                return match
            self.more()

    def peek(self) -> str:
        """The next character ('' at the end)."""
        self.need(1)
        return self.text[self.pos : self.pos + 1]

    def skip_statement(self) -> None:
        """Past the `;` that ends the statement being read (or to the end)."""
        while True:
            self.pos = sql.REST.match(self.text, self.pos).end()
            if self.pos < len(self.text) and self.text[self.pos] == ";":
                self.pos += 1
                return
            if not self.more():
                self.pos = len(self.text)  # the last statement, without its `;`
                return

    def statement(self) -> str:
        """The rest of the statement being read, up to its `;`."""
        self.mark = self.pos
        try:
            self.skip_statement()
            return self.text[self.mark : self.pos]
        finally:
            self.mark = None


class SqlDump:
    """A dump, opened anew for each reading. `tables` names the tables the
    last reading came across (created or inserted into), in the dump's order."""

    def __init__(self, open_dump: Opener):
        self.open_dump = open_dump
        self.tables: dict[str, None] = {}

    def rows(self, table: str, columns: tuple[str, ...]) -> Iterator[Row]:
        """The rows of `table` (its name in any case), each a tuple of
        `columns` (None for NULL, or for a column the table lacks). Which
        column a value is comes from the INSERT's column list, else from
        the dump's CREATE TABLE, else `columns`' order."""
        wanted = table.lower()
        names = [column.lower() for column in columns]
        self.tables = {}
        with self.open_dump() as raw:
            text = _Window(raw)
            while True:
                text.gap()
                if text.at_end():
                    return
                if insert := sql.INSERT.match(text.text, text.pos):
                    name = sql.unquoted(insert[1])
                    self.tables.setdefault(name, None)
                    if name.lower() != wanted:
                        text.skip_statement()
                        continue
                    given = (
                        [sql.unquoted(found).lower() for found in sql.NAMES.findall(insert[2])] if insert[2] else names
                    )
                    text.pos = insert.end()
                    yield from self._rows(text, name, given, [column.lower() for column in columns])
                elif create := sql.CREATE.match(text.text, text.pos):
                    name = sql.unquoted(create[1])
                    self.tables.setdefault(name, None)
                    text.pos = create.end()
                    if name.lower() == wanted:
                        names = [column.lower() for column in sql.columns(text.statement())]
                    else:
                        text.skip_statement()
                else:
                    start = text.pos
                    head = text.text[start : start + 300]
                    if sql.INSERT_VERB.match(head) and wanted in (
                        sql.unquoted(name).lower() for name in sql.NAMES.findall(head)
                    ):
                        raise SourceError(
                            f"Line {text.line_at(start)} of the dump could not be read: an INSERT into {table} "
                            f"was expected to begin `INSERT INTO {table} (its columns) VALUES`, but it is "
                            f"{text.excerpt(start)}."
                        )
                    text.skip_statement()

    def _rows(self, text: _Window, table: str, given: list[str], columns: list[str]) -> Iterator[Row]:
        """The rows of an INSERT, from its first row's `(` to its `;`."""
        width = len(given)
        where = places(given, columns)
        pattern = sql.row_pattern(width)
        last = False
        while not last:
            row = pattern.match(text.text, text.pos)
            if row is not None:
                text.pos = row.end()
                values = sql.values(row.groups()[:width])
                last = row[width + 1] == ";"
            else:
                values, last = self.slow_row(text, table, width)
            yield tuple(values) if where is None else tuple(values[at] if at >= 0 else None for at in where)

    @staticmethod
    def slow_row(text: _Window, table: str, width: int) -> tuple[list[str | None], bool]:
        """A row read value by value: its values, and whether it was the
        INSERT's last. Where it cannot be read, a SourceError says where and why."""

        def unreadable(expected: str) -> SourceError:
            return SourceError(
                f"Line {text.line_at(text.pos)} of the dump could not be read: in an INSERT into {table}, {expected} was "
                f"expected, but there is {text.excerpt(text.pos)}."
            )

        text.gap()
        start = text.pos
        if text.peek() != "(":
            raise unreadable("a row in parentheses `(...)`")
        text.pos += 1
        values: list[str | None] = []
        while True:
            text.gap()
            value = text.token(sql.VALUE)
            if value is None:
                raise unreadable("a value (a quoted string, a number or NULL)")
            if value.end() == len(text.text):
                text.pos = start
                raise SourceError(
                    f"The dump ends inside a row of {table} that begins on line {text.line_at(start)}: is it cut short?"
                )
            text.pos = value.end()
            values.extend(sql.values(value.groups()))
            text.gap()
            after = text.peek()
            if after not in (",", ")"):
                raise unreadable("`,` or `)` after a value")
            text.pos += 1
            if after == ")":
                break
        if len(values) != width:
            text.pos = start
            raise SourceError(
                f"Line {text.line_at(start)} of the dump could not be read: a row of {table} holds {len(values)} "
                f"value{'' if len(values) == 1 else 's'}, not one for each of its {width} columns: {text.excerpt(start)}."
            )
        text.gap()
        after = text.peek()
        if after not in (",", ";", ""):
            raise unreadable("`,` or `;` after a row")
        text.pos += len(after)
        return values, after != ","

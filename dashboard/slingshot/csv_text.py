"""CSV as people open it in a spreadsheet: a line at a time for exports
that stream, and cells a spreadsheet would run as a formula neutralised
behind a leading single quote (OWASP, "CSV injection"), which unquote takes
off again, so that an export imports back as it was."""

import csv
import io
from collections.abc import Callable, Iterable
from typing import Any

# The first characters that make a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


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

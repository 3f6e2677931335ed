"""The importer's COPY rows (clicks/entries.pyx) back into Python values:
for a click store that is not PostgreSQL (clickhouse_clicks.py), and for
tests and benchmarks that read what it would copy. Binary COPY of
`clicks`; COPY text of `orphan_visits`."""

import ipaddress
import re
import struct
import uuid
from datetime import datetime, timedelta, timezone

# PostgreSQL's type of each column of clicks.
CLICK_TYPES = {
    "click_id": "uuid",
    "occurred_at": "timestamptz",
    "slug": "text",
    "link_id": "int8",
    "ip": "inet",
    "country": "text",
    "user_agent_id": "int8",
    "browser": "text",
    "os": "text",
    "device": "text",
    "is_bot": "bool",
    "referer": "text",
    "referer_host": "text",
    "rule": "text",
    "import_id": "int8",
}
SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
PG_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
_INET_FAMILY = {4: 2, 6: 3}


class CopyFormatError(ValueError):
    """Rows that are not what the importer writes."""


def _inet(data: bytes) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    family, bits, is_cidr, size = data[:4]
    address = ipaddress.ip_address(data[4:])
    if (family, bits, is_cidr, size) != (_INET_FAMILY[address.version], 8 * size, 0, len(data) - 4):
        raise CopyFormatError(f"an inet field of family {family} and {bits} bits")
    return address


def _bool(data: bytes) -> bool:
    if data not in (b"\x00", b"\x01"):
        raise CopyFormatError("a bool field of more than 0 or 1")
    return data == b"\x01"


DECODE = {
    "uuid": lambda data: uuid.UUID(bytes=data),
    "timestamptz": lambda data: PG_EPOCH + timedelta(microseconds=struct.unpack("!q", data)[0]),
    "int8": lambda data: struct.unpack("!q", data)[0],
    "text": lambda data: data.decode("utf-8"),
    "bool": _bool,
    "inet": _inet,
}


def binary_start(payload: bytes) -> int:
    """Where the rows of a binary COPY begin, its header checked."""
    if payload[:11] != SIGNATURE:
        raise CopyFormatError("not binary COPY")
    flags, extension = struct.unpack_from("!ii", payload, 11)
    if flags:
        raise CopyFormatError(f"binary COPY with flags {flags:#x}")
    return 19 + extension


def binary_rows(payload: bytes, columns: tuple[str, ...]) -> list[tuple]:
    """The rows of a binary COPY of these columns of clicks, each a tuple of Python values (None for NULL)."""
    if not payload:
        return []
    at = binary_start(payload)
    decoders = [DECODE[CLICK_TYPES[column]] for column in columns]
    rows = []
    while True:
        (fields,) = struct.unpack_from("!h", payload, at)
        at += 2
        if fields == -1:
            break
        if fields != len(columns):
            raise CopyFormatError(f"a row of {fields} fields, not {len(columns)}")
        row = []
        for decode in decoders:
            (size,) = struct.unpack_from("!i", payload, at)
            at += 4
            row.append(None if size == -1 else decode(payload[at : at + size]))
            at += max(size, 0)
        rows.append(tuple(row))
    if at != len(payload):
        raise CopyFormatError("bytes after the trailer")
    return rows


_ESCAPE = re.compile(r"\\(.)")
_ESCAPED = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\", "b": "\b", "f": "\f", "v": "\v"}


def _text_field(field: str) -> str | None:
    if field == "\\N":
        return None
    if "\\" not in field:
        return field
    return _ESCAPE.sub(lambda match: _ESCAPED.get(match.group(1), match.group(1)), field)


def text_rows(payload: bytes, width: int) -> list[tuple[str | None, ...]]:
    """The rows of COPY text of `width` columns, each field as text (None for NULL)."""
    rows = []
    for line in payload.decode("utf-8").split("\n"):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != width:
            raise CopyFormatError(f"a line of {len(fields)} fields, not {width}")
        rows.append(tuple(_text_field(field) for field in fields))
    return rows

"""The importer's binary COPY rows of `clicks` (clicks/entries.pyx) back
into Python values, for tests and benchmarks that read what it would copy."""

import ipaddress
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


def _inet(data: bytes) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    family, bits, is_cidr, size = data[:4]
    address = ipaddress.ip_address(data[4:])
    assert (family, bits, is_cidr, size) == ({4: 2, 6: 3}[address.version], 8 * size, 0, len(data) - 4)
    return address


DECODE = {
    "uuid": lambda data: uuid.UUID(bytes=data),
    "timestamptz": lambda data: PG_EPOCH + timedelta(microseconds=struct.unpack("!q", data)[0]),
    "int8": lambda data: struct.unpack("!q", data)[0],
    "text": lambda data: data.decode("utf-8"),
    "bool": lambda data: {b"\x01": True, b"\x00": False}[data],
    "inet": _inet,
}


def binary_rows(payload: bytes, columns: tuple[str, ...]) -> list[tuple]:
    """The rows of a binary COPY of these columns of clicks, each a tuple of Python values (None for NULL)."""
    if not payload:
        return []
    assert payload[:11] == SIGNATURE, "not binary COPY"
    flags, extension = struct.unpack_from("!ii", payload, 11)
    assert flags == 0
    at = 19 + extension
    decoders = [DECODE[CLICK_TYPES[column]] for column in columns]
    rows = []
    while True:
        (fields,) = struct.unpack_from("!h", payload, at)
        at += 2
        if fields == -1:
            break
        assert fields == len(columns), (fields, columns)
        row = []
        for decode in decoders:
            (size,) = struct.unpack_from("!i", payload, at)
            at += 4
            row.append(None if size == -1 else decode(payload[at : at + size]))
            at += max(size, 0)
        rows.append(tuple(row))
    assert at == len(payload), "bytes after the trailer"
    return rows

"""Stream entries to a batch: decoded, checked, enriched, and laid out as the
rows the importer copies into PostgreSQL. No side effects: the only state is
a cache of rows already made for the raw values seen before.

A batch carries COPY rows of its raw clicks (CLICK_COLUMNS, in
`click_format`), COPY text of its orphan visits (ORPHAN_COLUMNS) and its
rollup input (the rows of batch_breakdown and batch_visitor_sets, as
rollups.breakdown_rows and rollups.visitor_rows write them), the links its
clicks were served by, and its user agents, which `user_agents` holds once
each, by id. The rows are written in C (entries.pyx): the importer's hot
loop.
"""

import ipaddress
import socket
import struct
import sys
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from .enrichment import ANONYMISED_PREFIX, IP_STORAGE_CODES, Enricher
from .entries import RowMaker
from .rollups import copy_text

# Clicks this far from the importer's clock are refused: a wild timestamp
# would otherwise create a partition decades away. A batch so spans fewer
# hours than 2^14 (entries.pyx, HOUR_BITS).
MAX_CLICK_AGE = timedelta(days=400)
MAX_CLICK_SKEW = timedelta(days=1)

CLICK_COLUMNS = (
    "click_id",
    "occurred_at",
    "slug",
    "link_id",
    "ip",
    "country",
    "user_agent_id",
    "browser",
    "os",
    "device",
    "is_bot",
    "referer",
    "referer_host",
    "rule",
)
ORPHAN_COLUMNS = (
    "click_id",
    "occurred_at",
    "slug",
    "ip",
    "country",
    "user_agent",
    "is_bot",
    "referer",
    "kind",
    "domain",
)
IMPORT_COLUMN = "import_id"
NULL = "\\N"
CACHE_MAX = 100_000  # raw values per cache before it starts again


@dataclass
class Batch:
    entries: list[tuple[bytes, dict]]  # as read from the stream
    ack_ids: list[bytes] = field(default_factory=list)
    dead: list[tuple[bytes, dict, str]] = field(default_factory=list)  # entry id, fields, reason
    link_ids: set[int] = field(default_factory=set)
    agents: dict[int, str] = field(default_factory=dict)  # user_agents rows: id -> user agent
    clicks: int = 0
    orphans: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    click_rows: bytes = b""  # in COPY's format click_format
    orphan_rows: bytes = b""
    breakdown_rows: bytes = b""
    visitor_rows: bytes = b""
    # The import that brought these visits from another shortener
    # (importers/history.py): each row of click_rows and orphan_rows then
    # ends in it, an IMPORT_COLUMN after the others.
    import_id: int | None = None
    # "binary" for the rows of entries.pyx (PostgreSQL parses a binary
    # timestamp, uuid and inet for less: docs/benchmarks.md), "text" for
    # the imports' (importers/history.py). Orphan visits are always text.
    click_format: str = "text"
    # The links whose clicks keep the address as their team chose rather than
    # as the maker's Enricher does: link id -> enrichment.IP_STORAGE_CODES;
    # None for a batch made with its team's choice throughout (importers/history.py).
    ip_storage: dict[int, int] | None = None
    made_at: datetime | None = None  # the `now` it was made at, if by a BatchMaker
    # Each click's visitor hash (docs/rollups.md), 8 bytes in the machine's
    # order, in the order of click_rows: made only for a click store that
    # rolls up itself (BatchMaker's visitors_per_click).
    click_visitors: bytes = b""
    # Made again from the record of a batch inserted before and not
    # acknowledged (clickhouse_batches.BatchRecords), as it was made then.
    recorded: bool = False

    @property
    def size(self) -> int:
        return self.clicks + self.orphans

    @property
    def click_columns(self) -> tuple[str, ...]:
        return CLICK_COLUMNS if self.import_id is None else (*CLICK_COLUMNS, IMPORT_COLUMN)

    @property
    def orphan_columns(self) -> tuple[str, ...]:
        return ORPHAN_COLUMNS if self.import_id is None else (*ORPHAN_COLUMNS, IMPORT_COLUMN)


class BatchMaker:
    """Makes batches. The rows are written in C (entries.RowMaker); what
    they need of an address, a user agent, a referrer or a rule is made
    here, once for each raw value, and kept.

    A click keeps its address as the enricher's `ip_privacy` says, but for
    the links of teams that chose otherwise (Team.ip_storage) that the
    maker knows of: the importer, which learns each link's choice as it
    stores a batch, tells it (ip_storage_learn) and has a batch it made
    without knowing made again. One batch is made at a time (the reader
    thread's next one and the store thread's again take turns)."""

    def __init__(self, enricher: Enricher, *, visitors_per_click: bool = False):
        self.enricher = enricher
        self._ip_storage: dict[int, int] = {}  # link id -> code, where not the enricher's
        self._lock = threading.Lock()
        # By the raw value's bytes as the entry has them: the rows of
        # _ip_row, _agent_row and _referer_row, and a rule's value id.
        self._ips: dict[bytes, tuple] = {}
        self._agents: dict[bytes, tuple] = {}
        self._referers: dict[bytes, tuple] = {}
        self._rules: dict[bytes, int] = {}
        # A click counts once under each of its (dimension, value) pairs:
        # their ids, and the COPY text of each by id.
        self._value_ids: dict[tuple[str, str], int] = {}
        self._values: list[bytes] = []
        self._rows = RowMaker(
            self._ips,
            self._agents,
            self._referers,
            self._rules,
            self._values,
            self._ip_row,
            self._agent_row,
            self._referer_row,
            lambda rule: self._value_id("rule", rule),
            self._ip_storage,
            IP_STORAGE_CODES[enricher.ip_privacy],
        )
        self._rows.visitors_per_click = visitors_per_click

    def _value_id(self, dimension: str, value: str) -> int:
        value_id = self._value_ids.get((dimension, value))
        if value_id is None:
            value_id = self._value_ids[dimension, value] = len(self._values)
            self._values.append(f"{dimension}\t{copy_text(value)}".encode("utf-8", "replace"))
        return value_id

    def _ip_row(self, raw: str) -> tuple[bytes, int, bytes, bytes, bytes, bytes]:
        """(COPY text of ip and country for an orphan visit, the country's
        value id, network hash, then the binary COPY fields of ip and
        country for each way of keeping the address, in the order of
        enrichment.IP_STORAGE_CODES: anonymised, whole, none)."""
        facts = self.enricher.ip(raw)
        text = f"{NULL if facts.stored is None else facts.stored}\t{copy_text(facts.country)}"
        country = _binary_text(facts.country)
        anonymised, whole = _binary_inets(facts.address)
        return (
            text.encode("utf-8", "replace"),
            self._value_id("country", facts.country),
            _hash_bytes(facts.network_hash),
            anonymised + country,
            whole + country,
            _NULL + country,
        )

    def _agent_row(self, raw: str) -> tuple[int, int, int, int, bytes, int, str, bytes, bytes]:
        """(the value ids of its browser, os and device, 1 for a bot and 0
        for a human, COPY text of an orphan's user_agent and is_bot, the
        agent's hash (its id), the agent as stored, the hash again for
        entries.pyx, the binary COPY fields of user_agent_id, browser, os,
        device and is_bot)."""
        facts = self.enricher.agent(raw)
        bot = "t" if facts.is_bot else "f"
        classes = (facts.browser, facts.os, facts.device)
        return (
            *(
                self._value_id(dimension, value)
                for dimension, value in zip(("browser", "os", "device"), classes, strict=True)
            ),
            int(facts.is_bot),
            f"{copy_text(facts.user_agent)}\t{bot}".encode("utf-8", "replace"),
            facts.agent_hash,
            facts.user_agent,
            _hash_bytes(facts.agent_hash),
            b"".join(
                [
                    _BIGINT + _INT8(facts.agent_hash),
                    *(_binary_text(value) for value in classes),
                    _TRUE if facts.is_bot else _FALSE,
                ]
            ),
        )

    def _referer_row(self, raw: str) -> tuple[int, bytes, bytes]:
        """(the host's value id, COPY text of the referer for an orphan
        visit, the binary COPY fields of referer and referer_host)."""
        facts = self.enricher.referer(raw)
        return (
            self._value_id("referer_host", facts.host),
            copy_text(facts.referer).encode("utf-8", "replace"),
            _binary_text(facts.referer) + _binary_text(facts.host),
        )

    def ip_storage_learn(self, link_ids: set[int], chosen: dict[int, int]) -> None:
        """What the teams of these links chose to keep of an address where
        not what the enricher keeps (link id -> code); the others keep the enricher's."""
        with self._lock:
            for link_id in link_ids:
                if link_id in chosen:
                    self._ip_storage[link_id] = chosen[link_id]
                else:
                    self._ip_storage.pop(link_id, None)

    def make_again(self, batch: Batch) -> Batch:
        """The batch of the same entries made again at the same time, with
        what the maker has learnt since."""
        return self.make(batch.entries, now=batch.made_at)

    def make(self, entries: list[tuple[bytes, dict]], *, now: datetime | None = None) -> Batch:
        """The batch of these entries. An entry that breaks the contract, or
        has a click out of the time range, goes to `dead` whole."""
        with self._lock:
            return self._make(entries, now=now or datetime.now(timezone.utc))

    def _make(self, entries: list[tuple[bytes, dict]], *, now: datetime) -> Batch:
        # The rows kept hold value ids: they start again together.
        if max(len(self._ips), len(self._agents), len(self._referers), len(self._values)) > CACHE_MAX:
            for cache in (self._ips, self._agents, self._referers, self._rules, self._value_ids, self._values):
                cache.clear()
        batch = Batch(entries=entries, click_format="binary", ip_storage={}, made_at=now)
        self._rows.make(
            entries,
            batch,
            int((now - MAX_CLICK_AGE).timestamp() * 1000),
            int((now + MAX_CLICK_SKEW).timestamp() * 1000),
        )
        return batch


# Fields of binary COPY (PostgreSQL's "COPY", File Formats): a length in 4
# bytes (-1 for NULL), then the value in the type's binary form.
_LENGTH, _INT8 = struct.Struct("!i").pack, struct.Struct("!q").pack
_BIGINT = _LENGTH(8)
_TRUE, _FALSE = _LENGTH(1) + b"\x01", _LENGTH(1) + b"\x00"
_NULL = _LENGTH(-1)
# inet's family byte (PostgreSQL's utils/inet.h: PGSQL_AF_INET, PGSQL_AF_INET6)
_INET_FAMILY = {4: 2, 16: 3}


def _binary_text(value: str) -> bytes:
    data = value.encode("utf-8", "replace")
    return _LENGTH(len(data)) + data


def _binary_inets(address: str | None) -> tuple[bytes, bytes]:
    """An address anonymised (enrichment.ANONYMISED_PREFIX) and whole, each
    as inet's binary form: family, bits, is_cidr, length, the address."""
    if address is None:
        return _NULL, _NULL
    # The enricher wrote it: inet_pton reads it for a fifth of ipaddress's cost or less,
    # all but an IPv6 zone (%eth0), which ipaddress reads and leaves out.
    try:
        packed = socket.inet_pton(socket.AF_INET6 if ":" in address else socket.AF_INET, address)
    except OSError:
        packed = ipaddress.ip_address(address).packed
    size = len(packed)
    head = _LENGTH(4 + size) + bytes((_INET_FAMILY[size], 8 * size, 0, size))
    kept = ANONYMISED_PREFIX[4 if size == 4 else 6] // 8
    return head + packed[:kept] + bytes(size - kept), head + packed


def _hash_bytes(value: int) -> bytes:
    """A signed 64-bit hash as entries.pyx reads it: 8 bytes in the machine's order."""
    return value.to_bytes(8, sys.byteorder, signed=True)

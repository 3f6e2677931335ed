"""Moves clicks from the Redis stream into PostgreSQL (docs/contract.md).

Each batch is read with XREADGROUP, written in one transaction (COPY into a
staging table, then one INSERT ... ON CONFLICT DO NOTHING into `clicks`), and
acknowledged only after COMMIT. A batch delivered again after a crash between
COMMIT and XACK hits the primary key and is not stored twice.
"""
import ipaddress
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import orjson
import redis
from django.db import connection, transaction

log = logging.getLogger(__name__)

STREAM = "slingshot:clicks"
GROUP = "importers"
DEAD_LETTER_STREAM = "slingshot:clicks:dead"
RECORD_VERSION = b"1"

# Clicks this far from the importer's clock are refused: a wild timestamp
# would otherwise create a partition decades away.
MAX_CLICK_AGE = timedelta(days=400)
MAX_CLICK_SKEW = timedelta(days=1)
UA_MAX = 512
REFERER_MAX = 1024


class BadEntry(ValueError):
    """A stream entry that breaks the contract; it goes to the dead-letter stream."""


@dataclass
class Batch:
    ack_ids: list[bytes] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    dead: list[tuple[bytes, dict, str]] = field(default_factory=list)


def _text(value, limit: int) -> str:
    if not isinstance(value, str):
        raise BadEntry("text field is not a string")
    return value[:limit].replace("\x00", "")


def parse_click(obj, now: datetime) -> tuple:
    if not isinstance(obj, dict):
        raise BadEntry("click is not an object")
    try:
        click_id, ts, slug = obj["id"], obj["ts"], obj["slug"]
    except KeyError as missing:
        raise BadEntry(f"click has no {missing.args[0]!r}") from None
    if not isinstance(click_id, str) or len(click_id) != 32:
        raise BadEntry("click id is not 32 hex digits")
    try:
        int(click_id, 16)
    except ValueError:
        raise BadEntry("click id is not 32 hex digits") from None
    if not isinstance(ts, int) or isinstance(ts, bool):
        raise BadEntry("click ts is not an integer")
    occurred_at = datetime.fromtimestamp(ts / 1000, tz=timezone.utc)
    if not now - MAX_CLICK_AGE <= occurred_at <= now + MAX_CLICK_SKEW:
        raise BadEntry("click ts is out of range")
    if not isinstance(slug, str) or not 1 <= len(slug) <= 64:
        raise BadEntry("click slug is not a string of 1 to 64 characters")
    ip = obj.get("ip")
    try:
        ip = str(ipaddress.ip_address(ip)) if ip else None
    except ValueError:
        ip = None
    return (
        click_id,
        occurred_at,
        slug,
        ip,
        _text(obj.get("ua", ""), UA_MAX),
        _text(obj.get("ref", ""), REFERER_MAX),
    )


def _decode_json(raw: bytes):
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # The edge passes header bytes through as they came; invalid UTF-8
        # is replaced rather than costing the whole entry.
        try:
            return json.loads(raw.decode("utf-8", "replace"))
        except ValueError as exc:
            raise BadEntry(f"clicks field is not JSON: {exc}") from None


def parse_entry(fields: dict, now: datetime) -> list[tuple]:
    if fields.get(b"v") != RECORD_VERSION:
        raise BadEntry(f"unknown record version {fields.get(b'v')!r}")
    raw = fields.get(b"clicks")
    if raw is None:
        raise BadEntry("entry has no clicks field")
    clicks = _decode_json(raw)
    if not isinstance(clicks, list):
        raise BadEntry("clicks field is not a JSON array")
    return [parse_click(obj, now) for obj in clicks]


def parse_entries(entries: Iterable[tuple[bytes, dict]]) -> Batch:
    batch = Batch()
    now = datetime.now(timezone.utc)
    for entry_id, fields in entries:
        batch.ack_ids.append(entry_id)
        if not fields:
            continue  # deleted from the stream while pending: nothing to store
        try:
            batch.rows.extend(parse_entry(fields, now))
        except BadEntry as exc:
            batch.dead.append((entry_id, fields, str(exc)))
    return batch


_STAGING_DDL = """
CREATE TEMP TABLE IF NOT EXISTS click_staging (
    click_id uuid, occurred_at timestamptz, slug text, ip inet, user_agent text, referer text
) ON COMMIT DELETE ROWS
"""
_COPY = "COPY click_staging (click_id, occurred_at, slug, ip, user_agent, referer) FROM STDIN"
_MERGE = """
INSERT INTO clicks (click_id, occurred_at, link_id, slug, ip, user_agent, referer)
SELECT s.click_id, s.occurred_at, l.id, s.slug, s.ip, s.user_agent, s.referer
FROM click_staging s LEFT JOIN links_link l ON l.slug = s.slug
ON CONFLICT DO NOTHING
"""


class ClickImporter:
    def __init__(self, *, client: redis.Redis, consumer: str, batch_size: int = 5000, block_ms: int = 1000):
        self.redis = client
        self.consumer = consumer
        self.batch_size = batch_size
        self.block_ms = block_ms
        self._months: set[tuple[int, int]] = set()

    def ensure_group(self) -> None:
        try:
            self.redis.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def _read(self, start: str, block: int | None) -> list[tuple[bytes, dict]]:
        reply = self.redis.xreadgroup(GROUP, self.consumer, {STREAM: start}, count=self.batch_size, block=block)
        return reply[0][1] if reply else []

    def _ensure_partitions(self, cursor, rows: list[tuple]) -> None:
        for occurred_at in {(row[1].year, row[1].month) for row in rows} - self._months:
            cursor.execute(
                "SELECT slingshot_ensure_click_partitions(%s, 0)",
                [datetime(occurred_at[0], occurred_at[1], 1, tzinfo=timezone.utc)],
            )
            self._months.add(occurred_at)

    def store(self, rows: list[tuple]) -> int:
        """Writes rows in one transaction; returns how many were new."""
        if not rows:
            return 0
        with transaction.atomic(), connection.cursor() as cursor:
            self._ensure_partitions(cursor, rows)
            cursor.execute(_STAGING_DDL)
            with cursor.copy(_COPY) as copy:
                for row in rows:
                    copy.write_row(row)
            cursor.execute(_MERGE)
            return cursor.rowcount

    def _dead_letter(self, dead: list[tuple[bytes, dict, str]]) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for entry_id, fields, reason in dead:
            log.warning("click entry %s moved to %s: %s", entry_id.decode(), DEAD_LETTER_STREAM, reason)
            pipe.xadd(DEAD_LETTER_STREAM, {b"entry_id": entry_id, b"reason": reason.encode(), **fields})
        pipe.execute()

    def process(self, entries: list[tuple[bytes, dict]]) -> tuple[int, int]:
        """Stores one batch and acknowledges it. Returns (clicks read, clicks stored)."""
        batch = parse_entries(entries)
        stored = self.store(batch.rows)
        if batch.dead:
            self._dead_letter(batch.dead)
        # Only after COMMIT: acknowledge, and delete what is acknowledged (the
        # stream is never trimmed below what is still pending).
        pipe = self.redis.pipeline(transaction=True)
        pipe.xack(STREAM, GROUP, *batch.ack_ids)
        pipe.xdel(STREAM, *batch.ack_ids)
        pipe.execute()
        return len(batch.rows), stored

    def run(self, *, once: bool, should_stop: Callable[[], bool] = lambda: False, report=None) -> int:
        """Imports until the stream is drained (once) or until should_stop()."""
        self.ensure_group()
        total = 0
        start = "0"  # first what this consumer read before and never acknowledged
        while not should_stop():
            block = None if (once or start == "0") else self.block_ms
            entries = self._read(start, block)
            if not entries:
                if start == "0":
                    start = ">"
                    continue
                if once:
                    break
                continue
            read, stored = self.process(entries)
            total += stored
            if report:
                report(len(entries), read, stored)
        return total


"""The click stream as the importer uses it (docs/contract.md): its names,
the consumer group, reading and claiming entries, dead letters,
acknowledgements, and the backlog."""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

import redis
from redis.client import Pipeline

from slingshot.contract import CLICKS_GROUP, CLICKS_STREAM, DEAD_LETTER_STREAM

log = logging.getLogger(__name__)

Entry = tuple[bytes, dict]  # an entry id and its fields, as redis-py returns them


class ClickStream:
    """One consumer of the group `importers`."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        consumer: str,
        store: str = "primary",
        batch_size: int = 200,
        claim_idle_ms: int = 60_000,
    ):
        self.redis = client
        self.consumer = consumer
        self.store = store  # the click store's name (clicks/stores.py)
        self.batch_size = batch_size  # entries per read (the edge puts up to 100 clicks in one)
        self.claim_idle_ms = claim_idle_ms

    def ensure_group(self) -> None:
        try:
            self.redis.xgroup_create(CLICKS_STREAM, CLICKS_GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def read(self, start: str, block_ms: int | None) -> list[Entry]:
        """Entries after `start`: '>' for new ones, '0' for this consumer's own pending ones."""
        reply = self.redis.xreadgroup(
            CLICKS_GROUP, self.consumer, {CLICKS_STREAM: start}, count=self.batch_size, block=block_ms
        )
        return reply[0][1] if reply else []

    def claim(self, start: str = "0-0") -> tuple[str, list[Entry]]:
        """Takes over entries another consumer left pending longer than
        claim_idle_ms. Returns the cursor to go on from ('0-0' once the scan
        is done) and the entries."""
        cursor, entries, *_deleted = self.redis.xautoclaim(
            CLICKS_STREAM,
            CLICKS_GROUP,
            self.consumer,
            min_idle_time=self.claim_idle_ms,
            start_id=start,
            count=self.batch_size,
        )
        cursor = cursor.decode() if isinstance(cursor, bytes) else cursor
        if entries:
            log.info("consumer %s claimed %d idle entries from %s", self.consumer, len(entries), entries[0][0].decode())
        return cursor, entries

    def claim_ids(self, ids: list[bytes]) -> list[Entry]:
        """Takes over these entries, whoever holds them pending: those of a
        batch recorded before its insert (clickhouse_clicks.py), which is
        made again from exactly its entries. Entries no longer pending are
        not returned."""
        claimed = self.redis.xclaim(CLICKS_STREAM, CLICKS_GROUP, self.consumer, min_idle_time=0, message_ids=ids)
        return [(entry_id, fields) for entry_id, fields in claimed if fields is not None]

    def dead_letter(self, dead: list[tuple[bytes, dict, str]]) -> None:
        """Copies entries that break the contract, with the reason, to the dead-letter stream."""
        pipe = self.redis.pipeline(transaction=False)
        for entry_id, fields, reason in dead:
            log.warning("click entry %s moved to %s: %s", entry_id.decode(), DEAD_LETTER_STREAM, reason)
            pipe.xadd(DEAD_LETTER_STREAM, {b"entry_id": entry_id, b"reason": reason.encode(), **fields})
        pipe.execute()

    def acknowledge(self, ids: list[bytes], *, also: Callable[[Pipeline], None] | None = None) -> None:
        """Only after the entries' clicks are committed. Deleting exactly the
        acknowledged ids trims the stream without ever touching an entry still
        pending or unread, so its length is the backlog. `also` adds to the
        same transaction."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.xack(CLICKS_STREAM, CLICKS_GROUP, *ids)
        pipe.xdel(CLICKS_STREAM, *ids)
        if also:
            also(pipe)
        pipe.execute()

    def leave(self) -> bool:
        """Removes this consumer from the group if it holds no pending entry."""
        for consumer in self.redis.xinfo_consumers(CLICKS_STREAM, CLICKS_GROUP):
            name = consumer["name"].decode() if isinstance(consumer["name"], bytes) else consumer["name"]
            if name == self.consumer and not consumer["pending"]:
                self.redis.xgroup_delconsumer(CLICKS_STREAM, CLICKS_GROUP, self.consumer)
                return True
        return False


@dataclass(frozen=True)
class ImportLag:
    backlog: int  # entries in the stream not yet acknowledged (read or not)
    pending: int  # of which read by a consumer and not yet acknowledged
    oldest_age_seconds: float  # age of the oldest entry not yet acknowledged; 0 when none
    consumers: dict[str, int] = field(default_factory=dict)  # consumer -> its pending entries


def import_lag(*, client: redis.Redis, now: datetime | None = None) -> ImportLag:
    """The importer deletes what it acknowledges, so the stream's length is its backlog."""
    now = now or datetime.now(timezone.utc)
    pipe = client.pipeline(transaction=False)
    pipe.xlen(CLICKS_STREAM)
    pipe.xrange(CLICKS_STREAM, count=1)
    pipe.xinfo_consumers(CLICKS_STREAM, CLICKS_GROUP)
    try:
        backlog, first, consumers = pipe.execute()
    except redis.ResponseError:  # no stream or no group yet: nothing to import
        return ImportLag(backlog=0, pending=0, oldest_age_seconds=0.0)
    oldest = 0.0
    if first:
        first_ms = int(first[0][0].split(b"-")[0])
        oldest = max(0.0, now.timestamp() - first_ms / 1000)
    by_name = {
        (c["name"].decode() if isinstance(c["name"], bytes) else c["name"]): int(c["pending"]) for c in consumers
    }
    return ImportLag(backlog=backlog, pending=sum(by_name.values()), oldest_age_seconds=oldest, consumers=by_name)

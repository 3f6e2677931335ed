"""The record of each batch the ClickHouse importer inserts, kept in the
stream's Redis from before its insert until its acknowledgement: its
entry ids, the time it was made at and the address choices it was made
with. Whoever reads any of those entries again makes that batch again
from them alone, as it was made, so that a batch sent again after a crash
is the very same block and deduplication drops it (clickhouse_clicks.py,
"Exactly once")."""

import json
from datetime import datetime

RECORD_PREFIX = "slingshot:clicks:clickhouse:batch:"  # + the batch's first entry id: its record
BATCH_OF = "slingshot:clicks:clickhouse:batch-of"  # hash: entry id -> its batch's first entry id


class BatchRecords:
    """The batches inserted and not yet acknowledged, in the stream's Redis."""

    def __init__(self, client):
        self.redis = client

    def record(self, batch) -> None:
        """Before the insert: the batch's entry ids, the time it was made
        at, and the links whose addresses it keeps as their team chose."""
        ids = [entry_id for entry_id, _ in batch.entries]
        record = {
            "ids": [entry_id.decode() for entry_id in ids],
            "made_at": batch.made_at.isoformat(),
            "ip_storage": {str(link): code for link, code in (batch.ip_storage or {}).items()},
        }
        pipe = self.redis.pipeline(transaction=True)
        pipe.set(RECORD_PREFIX + ids[0].decode(), json.dumps(record))
        pipe.hset(BATCH_OF, mapping=dict.fromkeys(ids, ids[0]))
        pipe.execute()

    def forget(self, pipe, batch) -> None:
        """With the acknowledgement (on its pipeline)."""
        ids = [entry_id for entry_id, _ in batch.entries]
        pipe.delete(RECORD_PREFIX + ids[0].decode())
        pipe.hdel(BATCH_OF, *ids)

    def find(self, entries: list) -> tuple[str, dict] | None:
        """The first recorded batch any of these entries belongs to: its
        first entry id and its record; None if none does."""
        if not entries:
            return None
        firsts = self.redis.hmget(BATCH_OF, [entry_id for entry_id, _ in entries])
        for first in dict.fromkeys(first for first in firsts if first is not None):
            raw = self.redis.get(RECORD_PREFIX + first.decode())
            if raw is not None:
                return first.decode(), json.loads(raw)
            # Its record went with its acknowledgement; the mapping of these entries stayed.
            self.redis.hdel(BATCH_OF, *[e for (e, _), mapped in zip(entries, firsts, strict=True) if mapped == first])
        return None

    def drop(self, first: str, record: dict) -> None:
        """A record whose entries are acknowledged already."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(RECORD_PREFIX + first)
        pipe.hdel(BATCH_OF, *record["ids"])
        pipe.execute()


def recorded_batch(entries: list, records: BatchRecords, claim) -> tuple[list, dict | None, list]:
    """Cuts what was read at a recorded batch: (the entries of the next
    batch, its record if it was recorded before, the entries left for the
    batches after it). A recorded batch's entries missing from `entries`
    are claimed (`claim(ids)`); if they are no longer pending, it was
    acknowledged and its record is dropped."""
    found = records.find(entries)
    if found is None:
        return entries, None, []
    first, record = found
    wanted = [entry_id.encode() for entry_id in record["ids"]]
    have = dict(entries)
    missing = [entry_id for entry_id in wanted if entry_id not in have]
    if missing:
        have.update(claim(missing))
    if any(entry_id not in have for entry_id in wanted):
        records.drop(first, record)
        return entries, None, []
    taken = set(wanted)
    return [(entry_id, have[entry_id]) for entry_id in wanted], record, [e for e in entries if e[0] not in taken]


def record_made_at(record: dict) -> datetime:
    return datetime.fromisoformat(record["made_at"])


def record_ip_storage(record: dict) -> dict[int, int]:
    return {int(link): code for link, code in record["ip_storage"].items()}

"""The importer with ClickHouse as the click store (CLICK_STORE=clickhouse):
the stream's batches into the cluster, each exactly once
(clickhouse_clicks.py), user agents still into PostgreSQL's `user_agents`
beside the links, teams and people.

A batch's store step: hold its links against deletion and learn what
their teams keep of an address (the batch made again if it was made
otherwise), add its user agents, record the batch, insert it, add its
clicks to the links' all-time totals (link_click_totals, which the links
list sorts by; but those a deletion of their link's visits hides) unless
its marker in clickhouse_batches says they were, COMMIT; then acknowledge
its entries and forget the record in one transaction. A batch read
again whose record is there is made again from its recorded entries,
time and address choices, and inserted as it was."""

from django.db import connection, transaction

from .batch import Batch
from .clickhouse_batches import BatchRecords, record_ip_storage, record_made_at, recorded_batch
from .clickhouse_clicks import counted_per_link, insert_batch
from .clickhouse_deletions import hidden_clicks
from .importer import _LOCK_LINKS, BatchResult, ClickImporter
from .stream import Entry

# A batch's marker, the consumer's earlier ones (acknowledged) let go: a
# row back if the batch's clicks were not counted before.
_MARK = """
WITH gone AS (
    DELETE FROM clickhouse_batches WHERE store = %(store)s AND consumer = %(consumer)s AND first_entry <> %(first)s
)
INSERT INTO clickhouse_batches (store, first_entry, consumer) VALUES (%(store)s, %(first)s, %(consumer)s)
ON CONFLICT DO NOTHING RETURNING 1
"""
_ADD_TOTALS = """
INSERT INTO link_click_totals AS t (link_id, clicks, human_clicks)
SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) ORDER BY 1
ON CONFLICT (link_id) DO UPDATE SET
    clicks = t.clicks + EXCLUDED.clicks,
    human_clicks = t.human_clicks + EXCLUDED.human_clicks
"""
_FORGET_MARKS = "DELETE FROM clickhouse_batches WHERE stored_at < now() - interval '1 day'"


class ClickHouseImporter(ClickImporter):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.records = BatchRecords(self.stream.redis)

    def batch_of(self, entries: list[Entry]) -> tuple[list[Entry], Batch, list[Entry]]:
        entries, record, left = recorded_batch(entries, self.records, self.stream.claim_ids)
        if record is None:
            return entries, self.maker.make(entries), left
        batch = self.maker.make(entries, now=record_made_at(record))
        chosen = record_ip_storage(record)
        if (batch.ip_storage or {}) != chosen:
            self.maker.ip_storage_learn(batch.link_ids, chosen)
            batch = self.maker.make_again(batch)
        batch.recorded = True
        return entries, batch, left

    def store(self, batch: Batch) -> int:
        if not batch.size:
            return 0
        with transaction.atomic(), connection.cursor() as cursor:
            # Held until COMMIT, so that a link deleted meanwhile takes its totals with it.
            cursor.execute(_LOCK_LINKS, [sorted(batch.link_ids)])
            links = cursor.fetchall()
            if not batch.recorded:
                batch = self._as_teams_chose(batch, links)
                self.records.record(batch)
            added_agents = self._agents_add(cursor, batch)
            stored, rows = insert_batch(batch, again=batch.recorded)
            first = batch.entries[0][0].decode()
            cursor.execute(_MARK, {"store": self.stream.store, "consumer": self.stream.consumer, "first": first})
            if cursor.fetchone():
                # Read under the links' lock, which a deletion of their visits waits for.
                per_link = counted_per_link(rows, hidden_clicks([link_id for link_id, _ in links]).before)
                live = [link_id for link_id, _ in links if link_id in per_link]
                counts = [per_link[link_id] for link_id in live]
                cursor.execute(_ADD_TOTALS, [live, [n for n, _ in counts], [human for _, human in counts]])
        self._agents_known(added_agents)
        return stored

    def process(self, entries: list[Entry], batch: Batch) -> BatchResult:
        stored = self.store(batch)
        if batch.dead:
            self.stream.dead_letter(batch.dead)
        self.stream.acknowledge(batch.ack_ids, also=lambda pipe: self.records.forget(pipe, batch))
        return BatchResult(entries=len(entries), clicks=batch.size, stored=stored, dead=len(batch.dead))


def forget_marks() -> None:
    """The markers of consumers gone for a day (their batches long claimed and acknowledged)."""
    with connection.cursor() as cursor:
        cursor.execute(_FORGET_MARKS)

"""The importer with ClickHouse as the click store (CLICK_STORE=clickhouse):
the stream's batches into the cluster, each exactly once
(clickhouse_clicks.py), user agents still into PostgreSQL's `user_agents`
beside the links, teams and people.

A batch's store step: learn what the batch's links' teams keep of an
address (the batch made again if it was made otherwise), add its user
agents, record the batch, insert it, COMMIT; then acknowledge its entries
and forget the record in one transaction. A batch read again whose record
is there is made again from its recorded entries, time and address
choices, and inserted as it was."""

from django.db import connection, transaction

from .batch import Batch
from .clickhouse_clicks import BatchRecords, insert_batch, record_ip_storage, record_made_at, recorded_batch
from .importer import BatchResult, ClickImporter
from .stream import Entry

# What each link's team keeps of an address ('' leaves it to CLICK_IP_PRIVACY).
_TEAM_CHOICES = """
SELECT l.id, t.ip_storage FROM links_link l JOIN teams_team t ON t.id = l.team_id WHERE l.id = ANY(%s::bigint[])
"""


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
            if not batch.recorded:
                cursor.execute(_TEAM_CHOICES, [sorted(batch.link_ids)])
                batch = self._as_teams_chose(batch, cursor.fetchall())
                self.records.record(batch)
            added_agents = self._agents_add(cursor, batch)
            stored = insert_batch(batch)
        self._agents_known(added_agents)
        return stored

    def process(self, entries: list[Entry], batch: Batch) -> BatchResult:
        stored = self.store(batch)
        if batch.dead:
            self.stream.dead_letter(batch.dead)
        self.stream.acknowledge(batch.ack_ids, also=lambda pipe: self.records.forget(pipe, batch))
        return BatchResult(entries=len(entries), clicks=batch.size, stored=stored, dead=len(batch.dead))

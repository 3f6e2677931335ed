"""The importer: moves batches of clicks from the stream into PostgreSQL,
each in one transaction, acknowledged only after COMMIT (docs/contract.md).

While the main thread stores a batch, a reader thread reads and makes the
next one (stream.py, batch.py). The store step:

1. locks the links the batch's clicks were served by against deletion
   (`FOR KEY SHARE`), so a link deleted meanwhile takes every click it had
   with it, these included (links.services.link_delete), and learns what
   each one's team keeps of an address (Team.ip_storage): a batch made
   without knowing is made again (batch.BatchMaker);
2. adds the user agents not stored yet;
3. COPYs the clicks into `clicks` and `orphan_visits`, whose primary keys
   hold the click ids. A click stored before (a batch delivered again after
   a crash between COMMIT and XACK, or a repeat from the edge) or one of a
   link gone since fails that COPY, and the batch goes through staging
   tables instead: only clicks that are new and of a live link are
   inserted, and only they are counted;
4. adds the batch to the rollups (rollups.py), and records the clicks it
   dropped for a deleted link as deleted with it (deletions.py), so that
   the accounting counts them.
"""

import gc
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psycopg
from django.db import IntegrityError, connection, transaction

from .batch import Batch, BatchMaker
from .deletions import dropped_record
from .enrichment import IP_STORAGE_CODES
from .partitions import MonthPartitions
from .rollups import BREAKDOWN_OF_NEW, COPY_BREAKDOWN, COPY_VISITORS, TEMP_TABLES, add_batch
from .signals import batch_stored
from .stream import ClickStream, Entry

log = logging.getLogger(__name__)

# Once per connection. work_mem is PostgreSQL's default, whatever the
# server's: a batch's visitor sketches are grouped by sorting, one group at
# a time. Each hll_add_agg state takes some 80 kB, so where work_mem lets
# the planner hash them 800 link-hours took 131 MB and spilled: the batch's
# rollups took 22 ms of CPU a batch of 2,500 clicks over 2,000 links, 13 ms
# sorted (docs/benchmarks.md, the importer).
_SESSION = f"""
SET temp_buffers = '64MB';
SET work_mem = '4MB';
SET hash_mem_multiplier = 2;
CREATE TEMP TABLE IF NOT EXISTS click_staging (LIKE clicks) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS orphan_staging (LIKE orphan_visits) ON COMMIT DELETE ROWS;
{TEMP_TABLES}
"""
# With what each link's team keeps of an address, where it chose ('' leaves it to CLICK_IP_PRIVACY).
_LOCK_LINKS = """
SELECT l.id, t.ip_storage FROM links_link l JOIN teams_team t ON t.id = l.team_id
WHERE l.id = ANY(%s::bigint[]) ORDER BY l.id FOR KEY SHARE OF l
"""
# In id order, so that importers adding the same agents wait for each other rather than deadlock.
_ADD_AGENTS = (
    "INSERT INTO user_agents (id, user_agent) SELECT * FROM unnest(%s::bigint[], %s::text[]) "
    "ORDER BY 1 ON CONFLICT DO NOTHING"
)
_COPY = "COPY {table} ({columns}) FROM STDIN (FORMAT {format})"
_INSERT_NEW_CLICKS = f"""
WITH new AS (
    INSERT INTO clicks SELECT * FROM click_staging WHERE link_id = ANY(%s::bigint[]) ON CONFLICT DO NOTHING
    RETURNING link_id, occurred_at, is_bot, referer_host, browser, os, device, country, rule
), counted AS ({BREAKDOWN_OF_NEW})
SELECT count(*) FROM new
"""
_INSERT_NEW_ORPHANS = "INSERT INTO orphan_visits SELECT * FROM orphan_staging ON CONFLICT DO NOTHING"
KNOWN_AGENTS_MAX = 1_000_000


class ConsumerBusy(RuntimeError):
    """Another importer runs with the same consumer name."""


@dataclass
class BatchResult:
    entries: int
    clicks: int  # read, orphan visits included
    stored: int  # new rows in clicks and orphan_visits
    dead: int


def _copy_into(table: str, columns: tuple[str, ...], format: str = "text") -> str:
    return _COPY.format(table=table, columns=", ".join(columns), format=format)


RELOCK_SECONDS = 10.0


def lock_key(consumer: str, store: str = "primary") -> str:
    return f"slingshot import_clicks {store}/{consumer}"


def tune_gc() -> None:
    """For a long-running importer: a batch makes hundreds of thousands of
    short-lived tuples, and the default collector thresholds would scan the
    whole heap many times per batch. Everything loaded so far (Django, the
    parsers' regexes) is frozen out of the scans."""
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


class ClickImporter:
    def __init__(self, *, stream: ClickStream, maker: BatchMaker, block_ms: int = 1000, linger_ms: int = 0):
        self.stream = stream
        self.maker = maker
        self.block_ms = block_ms
        self.linger_ms = linger_ms
        self._partitions = MonthPartitions()
        self._session_for = None  # the connection _SESSION ran on
        self._known_agents: set[int] = set()  # ids in user_agents, as far as this importer knows
        self._locked_before = False  # whether this importer has held its lock (acquire_lock)

    # --- the lock on the consumer name ---------------------------------------------

    def acquire_lock(self) -> None:
        """Holds a session advisory lock on the consumer name for as long as the
        database connection lives; a second importer of the same name gets ConsumerBusy.
        Taken again after a lost connection, the lock may still be held for a
        moment by the session that was lost (a terminated backend ends
        asynchronously): it is asked for again for up to RELOCK_SECONDS."""
        deadline = time.monotonic() + (RELOCK_SECONDS if self._locked_before else 0)
        while True:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                    [lock_key(self.stream.consumer, self.stream.store)],
                )
                if cursor.fetchone()[0]:
                    self._locked_before = True
                    return
            if time.monotonic() >= deadline:
                raise ConsumerBusy(
                    f"another import_clicks runs with consumer name {self.stream.consumer!r} on store {self.stream.store!r}"
                )
            time.sleep(0.1)

    def release_lock(self) -> None:
        if connection.connection is None or connection.connection.closed:
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_unlock(hashtextextended(%s, 0))",
                [lock_key(self.stream.consumer, self.stream.store)],
            )

    # --- the store step ---------------------------------------------------------------

    def store(self, batch: Batch) -> int:
        """Writes a batch's clicks and their rollups in one transaction;
        returns how many rows were new."""
        if not batch.size:
            return 0
        added_agents = []
        with transaction.atomic(), connection.cursor() as cursor:
            if self._session_for is not connection.connection:
                # A new connection, after a lost one: what the last transaction
                # seemed to make (a partition) may have been rolled back with it.
                cursor.execute(_SESSION)
                self._session_for = connection.connection
                self._partitions = MonthPartitions()
            self._partitions.ensure(cursor, batch.first_ms, batch.last_ms)
            cursor.execute(_LOCK_LINKS, [sorted(batch.link_ids)])
            links = cursor.fetchall()
            live = [row[0] for row in links]
            batch = self._as_teams_chose(batch, links)
            added_agents = self._agents_add(cursor, batch)
            stored = self._store_all(cursor, batch) if len(live) == len(batch.link_ids) else None
            if stored is None:
                stored = self._store_new(cursor, batch, live)
            self._copy(cursor, COPY_VISITORS, batch.visitor_rows)
            add_batch(cursor)
            batch_stored.send(sender=ClickImporter, cursor=cursor, batch=batch)
            if len(live) < len(batch.link_ids):
                # Last, so that an importer holding these rows waits for nothing.
                dropped_record(cursor, live)
        self._agents_known(added_agents)
        return stored

    def _agents_add(self, cursor, batch: Batch) -> list[int]:
        """Adds the batch's user agents this importer does not know are
        stored; returns their ids, known once the transaction commits."""
        added = [agent for agent in batch.agents if agent not in self._known_agents]
        if added:
            cursor.execute(_ADD_AGENTS, [added, [batch.agents[agent] for agent in added]])
        return added

    def _agents_known(self, added: list[int]) -> None:
        if len(self._known_agents) > KNOWN_AGENTS_MAX:
            self._known_agents.clear()
        self._known_agents.update(added)

    def batch_of(self, entries: list[Entry]) -> tuple[list[Entry], Batch, list[Entry]]:
        """What to store next of the entries read: (its entries, its batch,
        the entries left for the next). Here all of them, as they came."""
        return entries, self.maker.make(entries), []

    def _as_teams_chose(self, batch: Batch, links: list[tuple[int, str]]) -> Batch:
        """The batch, or if it keeps an address otherwise than a link's team
        chose (a link the maker did not know of, or a choice changed), the
        batch made again once the maker has learnt the batch's links' choices."""
        if batch.ip_storage is None:
            return batch  # made with its team's choice (importers/history.py)
        default = self.maker.enricher.ip_privacy
        chosen = {link_id: IP_STORAGE_CODES[storage] for link_id, storage in links if storage and storage != default}
        if chosen == batch.ip_storage:
            return batch
        self.maker.ip_storage_learn(batch.link_ids, chosen)
        # Its rows let go first: the caller keeps the batch as first made for
        # its acknowledgements and dead letters alone, not twice its rows.
        batch.click_rows = batch.orphan_rows = batch.breakdown_rows = batch.visitor_rows = b""
        return self.maker.make_again(batch)

    def _store_all(self, cursor, batch: Batch) -> int | None:
        """The fast way: every click of the batch straight into its table;
        None, with nothing written, if any was there already."""
        try:
            with transaction.atomic():
                self._copy(cursor, _copy_into("clicks", batch.click_columns, batch.click_format), batch.click_rows)
                self._copy(cursor, _copy_into("orphan_visits", batch.orphan_columns), batch.orphan_rows)
        except (IntegrityError, psycopg.errors.UniqueViolation):
            return None
        self._copy(cursor, COPY_BREAKDOWN, batch.breakdown_rows)
        return batch.size

    def _store_new(self, cursor, batch: Batch, live: list[int]) -> int:
        """The slow way, for a batch some of whose clicks are stored already
        or whose link is gone: stores and counts the new clicks of live links."""
        self._copy(cursor, _copy_into("click_staging", batch.click_columns, batch.click_format), batch.click_rows)
        self._copy(cursor, _copy_into("orphan_staging", batch.orphan_columns), batch.orphan_rows)
        cursor.execute(_INSERT_NEW_CLICKS, [live])
        clicks = cursor.fetchone()[0]
        cursor.execute(_INSERT_NEW_ORPHANS)
        orphans = cursor.rowcount
        log.info(
            "batch of %d clicks: %d stored already or of deleted links; storing the rest",
            batch.size,
            batch.size - clicks - orphans,
        )
        return clicks + orphans

    @staticmethod
    def _copy(cursor, statement: str, payload: bytes) -> None:
        if payload:
            with cursor.copy(statement) as copy:
                copy.write(payload)

    # --- the loop ---------------------------------------------------------------------

    def process(self, entries: list[Entry], batch: Batch) -> BatchResult:
        """Stores one batch, dead-letters its bad entries, and acknowledges it."""
        stored = self.store(batch)
        if batch.dead:
            self.stream.dead_letter(batch.dead)
        self.stream.acknowledge(batch.ack_ids)
        return BatchResult(entries=len(entries), clicks=batch.size, stored=stored, dead=len(batch.dead))

    def run(
        self,
        *,
        once: bool,
        should_stop: Callable[[], bool] = lambda: False,
        report: Callable[[BatchResult], None] = lambda result: None,
        every_so_often: Callable[[], None] | None = None,
    ) -> int:
        """Imports until the stream is drained (once) or until should_stop().

        Order of work: this consumer's own pending entries (a restart after a
        crash), then entries other consumers left idle (XAUTOCLAIM), then new
        ones; idle entries are looked for again every claim_idle_ms / 2.
        Acknowledgements follow each COMMIT in order. Returns the number of
        new rows stored.
        """
        self.stream.ensure_group()
        self.acquire_lock()
        feed = _Feed(self, once=once)
        total = 0
        try:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="click-reader") as reader:
                upcoming = reader.submit(feed.next)
                try:
                    while not should_stop():
                        if every_so_often:
                            every_so_often()
                        entries, batch = upcoming.result()
                        if not entries and feed.drained:
                            break
                        upcoming = reader.submit(feed.next)
                        if entries:
                            result = self.process(entries, batch)
                            total += result.stored
                            report(result)
                finally:
                    # A batch read ahead and not stored stays pending for this
                    # consumer, which reads it first when it starts again.
                    feed.stopping = True
        finally:
            self.release_lock()
        return total


class _Feed:
    """Where the next entries come from, read and made into a batch in the reader thread."""

    def __init__(self, importer: ClickImporter, *, once: bool):
        self.importer, self.stream, self.once = importer, importer.stream, once
        self.left: list[Entry] = []  # read, and left for the next batch (ClickImporter.batch_of)
        self.block_ms = importer.block_ms
        self.linger = importer.linger_ms / 1000
        self.next_read = 0.0  # following: new entries are read no sooner than this (linger)
        self.start = "0"  # first what this consumer read before and never acknowledged
        self.claim_cursor, self.next_claim = "0-0", 0.0
        self.drained = False  # with once: nothing left to read
        self.stopping = False

    def next(self) -> tuple[list[Entry], Batch | None]:
        if self.stopping:
            return [], None
        stream = self.stream
        if self.left:
            entries, self.left = self.left, []
        elif self.start == ">" and time.monotonic() >= self.next_claim:
            self.claim_cursor, entries = stream.claim(self.claim_cursor)
            if self.claim_cursor == "0-0":
                self.next_claim = time.monotonic() + stream.claim_idle_ms / 2000
        else:
            catching_up = self.start != ">"
            if not (catching_up or self.once) and self.linger:
                # A batch of what came in over the linger, not of the few
                # entries that came while the last one was stored: a
                # transaction costs PostgreSQL and the importer a few
                # milliseconds of its own.
                time.sleep(max(0.0, self.next_read - time.monotonic()))
                self.next_read = time.monotonic() + self.linger
            entries = stream.read(self.start, None if (self.once or catching_up) else self.block_ms)
            if catching_up:
                # Own pending entries, oldest first; the next read starts after
                # these, as they are still pending while they are being stored.
                self.start = entries[-1][0].decode() if entries else ">"
            elif not entries and self.once:
                self.drained = True
        if not entries:
            return entries, None
        # A batch holds no reference cycles and is freed by reference
        # counting once stored; the cyclic collector's scans of it while it
        # grows would cost 10 - 20% of making it. It runs between batches.
        gc.disable()
        try:
            entries, batch, self.left = self.importer.batch_of(entries)
            return entries, batch
        finally:
            gc.enable()

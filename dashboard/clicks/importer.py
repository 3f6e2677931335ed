"""Moves clicks from the Redis stream into PostgreSQL (docs/contract.md).

Each batch is read with XREADGROUP (or reclaimed from a dead consumer with
XAUTOCLAIM), enriched, written in one transaction, and acknowledged only
after COMMIT:

1. COPY into a temporary staging table, one text line per click;
2. INSERT ... ON CONFLICT DO NOTHING into `clicks` (and `orphan_visits`),
   RETURNING what was new: a batch delivered again after a crash between
   COMMIT and XACK hits the primary key and is neither stored nor counted twice;
3. the rollups (docs/rollups.md) from the new clicks only, with
   INSERT ... SELECT ... GROUP BY ... ON CONFLICT DO UPDATE.

Acknowledged entries are deleted from the stream (XACK + XDEL in one
MULTI), so the stream only ever holds what is not imported yet.
"""
import json
import logging
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import orjson
import redis
from django.db import connection, transaction

from .enrichment import Enricher, copy_text

log = logging.getLogger(__name__)

STREAM = "slingshot:clicks"
GROUP = "importers"
DEAD_LETTER_STREAM = "slingshot:clicks:dead"
RECORD_VERSION = b"1"

# Clicks this far from the importer's clock are refused: a wild timestamp
# would otherwise create a partition decades away.
MAX_CLICK_AGE = timedelta(days=400)
MAX_CLICK_SKEW = timedelta(days=1)
SLUG_MAX = 64

_CLICK_ID = re.compile(r"[0-9a-fA-F]{32}").fullmatch
STAGING_COLUMNS = ("click_id", "ts", "slug", "orphan", *Enricher.IP_COLUMNS, *Enricher.AGENT_COLUMNS,
                   *Enricher.REFERER_COLUMNS)


class BadEntry(ValueError):
    """A stream entry that breaks the contract; it goes to the dead-letter stream."""


class ConsumerBusy(RuntimeError):
    """Another importer runs with the same consumer name."""


@dataclass
class Batch:
    ack_ids: list[bytes] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # COPY text of STAGING_COLUMNS, one click each
    dead: list[tuple[bytes, dict, str]] = field(default_factory=list)
    first_ms: int | None = None
    last_ms: int | None = None
    # Clicks that are not orphan visits, counted by what the rollups group on:
    # (slug, hour since the epoch, (browser, os, device, is_bot), referrer host, country).
    counts: Counter = field(default_factory=Counter)

    @property
    def clicks(self) -> int:
        return len(self.lines)

    @property
    def non_orphans(self) -> int:
        return self.counts.total()


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


def parse_entry(fields: dict, *, enricher: Enricher, min_ms: int, max_ms: int) -> tuple[list[str], list[tuple], int, int]:
    """COPY lines of one stream entry, the rollup keys of its non-orphan
    clicks, and its first and last ts; raises BadEntry if any of it breaks the contract."""
    if fields.get(b"v") != RECORD_VERSION:
        raise BadEntry(f"unknown record version {fields.get(b'v')!r}")
    raw = fields.get(b"clicks")
    if raw is None:
        raise BadEntry("entry has no clicks field")
    clicks = _decode_json(raw)
    if not isinstance(clicks, list):
        raise BadEntry("clicks field is not a JSON array")
    lines, keys = [], []
    first_ms, last_ms = max_ms, min_ms
    ip_facts, agent_facts, referer_facts = enricher.ip, enricher.agent, enricher.referer
    for obj in clicks:  # the hot loop: a few µs per click
        if type(obj) is not dict:
            raise BadEntry("click is not an object")
        try:
            click_id, ts, slug = obj["id"], obj["ts"], obj["slug"]
        except KeyError as missing:
            raise BadEntry(f"click has no {missing.args[0]!r}") from None
        if type(click_id) is not str or not _CLICK_ID(click_id):
            raise BadEntry("click id is not 32 hex digits")
        if type(ts) is not int:
            raise BadEntry("click ts is not an integer")
        if not min_ms <= ts <= max_ms:
            raise BadEntry("click ts is out of range")
        if ts < first_ms:
            first_ms = ts
        if ts > last_ms:
            last_ms = ts
        if type(slug) is not str or not 1 <= len(slug) <= SLUG_MAX:
            raise BadEntry("click slug is not a string of 1 to 64 characters")
        ip, ua, ref = obj.get("ip"), obj.get("ua", ""), obj.get("ref", "")
        if type(ua) is not str or type(ref) is not str:
            raise BadEntry("text field is not a string")
        ip_text, country = ip_facts(ip if type(ip) is str else "")
        agent_text, agent = agent_facts(ua)
        referer_text, host = referer_facts(ref)
        orphan = obj.get("orphan") is True
        if "\\" in slug or "\t" in slug or "\n" in slug or "\r" in slug or "\x00" in slug:
            slug = copy_text(slug.replace("\x00", ""))
        lines.append(f"{click_id}\t{ts}\t{slug}\t{'t' if orphan else 'f'}\t{ip_text}\t{agent_text}\t{referer_text}\n")
        if not orphan:
            keys.append((slug, ts // 3_600_000, agent, host, country))
    return lines, keys, first_ms, last_ms


def parse_entries(entries: Iterable[tuple[bytes, dict]], *, enricher: Enricher, now: datetime | None = None) -> Batch:
    now = now or datetime.now(timezone.utc)
    min_ms = int((now - MAX_CLICK_AGE).timestamp() * 1000)
    max_ms = int((now + MAX_CLICK_SKEW).timestamp() * 1000)
    batch = Batch()
    for entry_id, fields in entries:
        batch.ack_ids.append(entry_id)
        if not fields:
            continue  # deleted from the stream while pending: nothing to store
        try:
            lines, keys, first_ms, last_ms = parse_entry(fields, enricher=enricher, min_ms=min_ms, max_ms=max_ms)
        except BadEntry as exc:
            batch.dead.append((entry_id, fields, str(exc)))
            continue
        if lines:
            batch.lines.extend(lines)
            batch.counts.update(keys)
            batch.first_ms = first_ms if batch.first_ms is None else min(batch.first_ms, first_ms)
            batch.last_ms = last_ms if batch.last_ms is None else max(batch.last_ms, last_ms)
    return batch


def breakdown_rows(counts: Counter) -> list[str]:
    """COPY text of batch_counts: (slug, hour, dimension, value, clicks, human clicks)."""
    totals: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for (slug, hour, (browser, os_family, device, is_bot), host, country), n in counts.items():
        human = 0 if is_bot else n
        for dimension, value in (("referer_host", host), ("browser", browser), ("os", os_family),
                                 ("device", device), ("country", country)):
            total = totals[slug, hour, dimension, value]
            total[0] += n
            total[1] += human
    return [f"{slug}\t{hour}\t{dimension}\t{copy_text(value)}\t{n}\t{human}\n"
            for (slug, hour, dimension, value), (n, human) in totals.items()]


# --- SQL of one batch ----------------------------------------------------------

_TEMP_TABLES = """
CREATE TEMP TABLE IF NOT EXISTS click_staging (
    click_id uuid, ts bigint, slug text, orphan boolean,
    ip inet, visitor_net text, country text,
    user_agent text, browser text, os text, device text, is_bot boolean,
    referer text, referer_host text
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS click_new (click_id uuid, link_id bigint) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS batch_breakdown (
    link_id bigint, hour bigint, dimension text, value text, clicks bigint, human_clicks bigint
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS batch_counts (
    slug text, hour bigint, dimension text, value text, clicks bigint, human_clicks bigint
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS batch_visitors (link_id bigint, hour bigint, visitor bigint, is_bot boolean)
    ON COMMIT DELETE ROWS;
"""
_COPY = f"COPY click_staging ({', '.join(STAGING_COLUMNS)}) FROM STDIN"
_OCCURRED_AT = "(timestamptz 'epoch' + s.ts * interval '1 millisecond')"
_INSERT_ORPHANS = f"""
INSERT INTO orphan_visits (click_id, occurred_at, slug, ip, user_agent, referer, is_bot, country)
SELECT s.click_id, {_OCCURRED_AT}, s.slug, s.ip, s.user_agent, s.referer, s.is_bot, s.country
FROM click_staging s WHERE s.orphan
ON CONFLICT DO NOTHING
"""
_INSERT_CLICKS = f"""
WITH inserted AS (
    INSERT INTO clicks (click_id, occurred_at, link_id, slug, ip, user_agent, referer,
                        is_bot, browser, os, device, country, referer_host)
    SELECT s.click_id, {_OCCURRED_AT}, l.id, s.slug, s.ip, s.user_agent, s.referer,
           s.is_bot, s.browser, s.os, s.device, s.country, s.referer_host
    FROM click_staging s LEFT JOIN links_link l ON l.slug = s.slug
    WHERE NOT s.orphan
    ON CONFLICT DO NOTHING
    RETURNING click_id, link_id
)
INSERT INTO click_new SELECT click_id, link_id FROM inserted
"""
# Only clicks new in this transaction (click_new) of an existing link are
# counted. When every click of the batch was new (the usual case), the
# importer has counted them already and sends only the counts (batch_counts);
# after a redelivery, the new ones are counted here from the staging table.
_COPY_COUNTS = "COPY batch_counts (slug, hour, dimension, value, clicks, human_clicks) FROM STDIN"
_BATCH_BREAKDOWN_FROM_COUNTS = """
INSERT INTO batch_breakdown
SELECT l.id, b.hour, b.dimension, b.value, b.clicks, b.human_clicks
FROM batch_counts b JOIN links_link l ON l.slug = b.slug
"""
_BATCH_BREAKDOWN = """
INSERT INTO batch_breakdown
SELECT n.link_id, s.ts / 3600000, d.dimension, d.value, count(*), count(*) FILTER (WHERE NOT s.is_bot)
FROM click_new n JOIN click_staging s USING (click_id)
CROSS JOIN LATERAL (VALUES ('referer_host', s.referer_host), ('browser', s.browser), ('os', s.os),
                           ('device', s.device), ('country', s.country)) AS d (dimension, value)
WHERE n.link_id IS NOT NULL
GROUP BY 1, 2, 3, 4
"""
_BATCH_VISITORS = """
INSERT INTO batch_visitors
SELECT DISTINCT n.link_id, s.ts / 3600000, hashtextextended(s.visitor_net || ' ' || s.user_agent, 0), s.is_bot
FROM click_new n JOIN click_staging s USING (click_id)
WHERE n.link_id IS NOT NULL
"""
_BUCKET = {
    "hour": "timestamptz 'epoch' + hour * interval '1 hour'",
    "day": "timestamptz 'epoch' + (hour / 24) * interval '24 hours'",
}
# Rows go in key order so that two importers updating the same rollup rows
# lock them in the same order. Each click is in every dimension once, so the
# batch's click counts are those of any one dimension.
_ROLLUP = """
WITH fresh AS (
    INSERT INTO click_visitors_{g} (link_id, bucket, visitor, is_bot)
    SELECT DISTINCT link_id, {bucket}, visitor, is_bot FROM batch_visitors ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING
    RETURNING link_id, bucket, is_bot
), fresh_counts AS (
    SELECT link_id, bucket, count(*) AS visitors, count(*) FILTER (WHERE NOT is_bot) AS human_visitors
    FROM fresh GROUP BY 1, 2
), click_counts AS (
    SELECT link_id, {bucket} AS bucket, sum(clicks) AS clicks, sum(human_clicks) AS human_clicks
    FROM batch_breakdown WHERE dimension = 'browser' GROUP BY 1, 2
)
INSERT INTO click_rollup_{g} AS r (link_id, bucket, clicks, human_clicks, visitors, human_visitors)
SELECT c.link_id, c.bucket, c.clicks, c.human_clicks, coalesce(f.visitors, 0), coalesce(f.human_visitors, 0)
FROM click_counts c LEFT JOIN fresh_counts f USING (link_id, bucket)
ORDER BY 1, 2
ON CONFLICT (link_id, bucket) DO UPDATE SET
    clicks = r.clicks + EXCLUDED.clicks,
    human_clicks = r.human_clicks + EXCLUDED.human_clicks,
    visitors = r.visitors + EXCLUDED.visitors,
    human_visitors = r.human_visitors + EXCLUDED.human_visitors
"""
_BREAKDOWN = """
INSERT INTO click_breakdown_{g} AS r (link_id, bucket, dimension, value, clicks, human_clicks)
SELECT link_id, {bucket}, dimension, value, sum(clicks), sum(human_clicks)
FROM batch_breakdown GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
ON CONFLICT (link_id, bucket, dimension, value) DO UPDATE SET
    clicks = r.clicks + EXCLUDED.clicks,
    human_clicks = r.human_clicks + EXCLUDED.human_clicks
"""
_TOTALS = """
INSERT INTO link_click_totals AS t (link_id, clicks, human_clicks)
SELECT link_id, sum(clicks), sum(human_clicks)
FROM batch_breakdown WHERE dimension = 'browser' GROUP BY 1 ORDER BY 1
ON CONFLICT (link_id) DO UPDATE SET
    clicks = t.clicks + EXCLUDED.clicks,
    human_clicks = t.human_clicks + EXCLUDED.human_clicks
"""
_ROLLUP_STATEMENTS = [
    _BATCH_VISITORS,
    *(sql.format(g=g, bucket=bucket) for g, bucket in _BUCKET.items() for sql in (_ROLLUP, _BREAKDOWN)),
    _TOTALS,
]


@dataclass
class Stored:
    clicks: int = 0  # new rows in clicks
    orphans: int = 0  # new rows in orphan_visits


@dataclass
class BatchResult:
    entries: int
    clicks: int
    stored: int
    dead: int


def lock_key(consumer: str) -> str:
    return f"slingshot import_clicks {consumer}"


class ClickImporter:
    def __init__(self, *, client: redis.Redis, consumer: str, enricher: Enricher, batch_size: int = 200,
                 block_ms: int = 1000, claim_idle_ms: int = 60_000):
        self.redis = client
        self.consumer = consumer
        self.enricher = enricher
        self.batch_size = batch_size  # stream entries per batch (the edge puts ~100 clicks in one)
        self.block_ms = block_ms
        self.claim_idle_ms = claim_idle_ms
        self._months: set[int] = set()
        self._temp_tables_for = None

    # --- Redis ---------------------------------------------------------------

    def ensure_group(self) -> None:
        try:
            self.redis.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def read(self, start: str, block: int | None) -> list[tuple[bytes, dict]]:
        reply = self.redis.xreadgroup(GROUP, self.consumer, {STREAM: start}, count=self.batch_size, block=block)
        return reply[0][1] if reply else []

    def claim(self, start: str = "0-0") -> tuple[str, list[tuple[bytes, dict]]]:
        """Takes over entries another consumer left pending longer than claim_idle_ms.
        Returns the cursor to continue from ('0-0' when the scan is done) and the entries."""
        cursor, entries, *_deleted = self.redis.xautoclaim(
            STREAM, GROUP, self.consumer, min_idle_time=self.claim_idle_ms, start_id=start, count=self.batch_size
        )
        cursor = cursor.decode() if isinstance(cursor, bytes) else cursor
        if entries:
            log.info("consumer %s claimed %d idle entries from %s", self.consumer, len(entries), entries[0][0].decode())
        return cursor, entries

    def _dead_letter(self, dead: list[tuple[bytes, dict, str]]) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for entry_id, fields, reason in dead:
            log.warning("click entry %s moved to %s: %s", entry_id.decode(), DEAD_LETTER_STREAM, reason)
            pipe.xadd(DEAD_LETTER_STREAM, {b"entry_id": entry_id, b"reason": reason.encode(), **fields})
        pipe.execute()

    def _acknowledge(self, ack_ids: list[bytes]) -> None:
        # Only after COMMIT. Deleting exactly the acknowledged ids trims the
        # stream without ever touching an entry still pending or unread.
        pipe = self.redis.pipeline(transaction=True)
        pipe.xack(STREAM, GROUP, *ack_ids)
        pipe.xdel(STREAM, *ack_ids)
        pipe.execute()

    # --- PostgreSQL ------------------------------------------------------------

    def acquire_lock(self) -> None:
        """Holds a session advisory lock on the consumer name for as long as the
        database connection lives; a second importer of the same name gets ConsumerBusy."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [lock_key(self.consumer)])
            if not cursor.fetchone()[0]:
                raise ConsumerBusy(f"another import_clicks runs with consumer name {self.consumer!r}")

    def release_lock(self) -> None:
        if connection.connection is None:
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [lock_key(self.consumer)])

    def _ensure_partitions(self, cursor, batch: Batch) -> None:
        first = datetime.fromtimestamp(batch.first_ms / 1000, tz=timezone.utc)
        last = datetime.fromtimestamp(batch.last_ms / 1000, tz=timezone.utc)
        months = (last.year - first.year) * 12 + last.month - first.month
        key = first.year * 12 + first.month
        if all(key + i in self._months for i in range(months + 1)):
            return
        cursor.execute("SELECT slingshot_ensure_click_partitions(%s, %s)", [first, months])
        self._months.update(key + i for i in range(months + 1))

    def store(self, batch: Batch) -> Stored:
        """Writes a batch's clicks and their rollups in one transaction."""
        if not batch.lines:
            return Stored()
        payload = "".join(batch.lines).encode("utf-8", "replace")
        with transaction.atomic(), connection.cursor() as cursor:
            if self._temp_tables_for is not connection.connection:
                cursor.execute(_TEMP_TABLES)
                self._temp_tables_for = connection.connection
            self._ensure_partitions(cursor, batch)
            with cursor.copy(_COPY) as copy:
                copy.write(payload)
            cursor.execute(_INSERT_ORPHANS)
            orphans = cursor.rowcount
            cursor.execute(_INSERT_CLICKS)
            clicks = cursor.rowcount
            if clicks == batch.non_orphans:
                with cursor.copy(_COPY_COUNTS) as copy:
                    copy.write("".join(breakdown_rows(batch.counts)).encode("utf-8", "replace"))
                cursor.execute(_BATCH_BREAKDOWN_FROM_COUNTS)
            else:
                log.info("batch of %d clicks had %d stored already; counting the new ones in SQL",
                         batch.non_orphans, batch.non_orphans - clicks)
                cursor.execute(_BATCH_BREAKDOWN)
            for statement in _ROLLUP_STATEMENTS:
                cursor.execute(statement)
            return Stored(clicks=clicks, orphans=orphans)

    # --- the loop ----------------------------------------------------------------

    def process(self, entries: list[tuple[bytes, dict]], batch: Batch | None = None) -> BatchResult:
        """Stores one batch and acknowledges it."""
        batch = batch or parse_entries(entries, enricher=self.enricher)
        stored = self.store(batch)
        if batch.dead:
            self._dead_letter(batch.dead)
        self._acknowledge(batch.ack_ids)
        return BatchResult(entries=len(entries), clicks=batch.clicks, stored=stored.clicks + stored.orphans,
                           dead=len(batch.dead))

    def run(self, *, once: bool, should_stop: Callable[[], bool] = lambda: False,
            report: Callable[[BatchResult], None] | None = None,
            every_so_often: Callable[[], None] | None = None) -> int:
        """Imports until the stream is drained (once) or until should_stop().

        Order of work: this consumer's own pending entries (a restart after a
        crash), then entries other consumers left idle (XAUTOCLAIM), then new
        ones; idle entries are looked for again every claim_idle_ms / 2.
        While PostgreSQL stores a batch, a second thread reads and parses the
        next one; acknowledgements still follow each COMMIT in order.
        Returns the number of clicks stored.
        """
        report = report or (lambda result: None)
        self.ensure_group()
        self.acquire_lock()
        feed = _Feed(self, once=once)
        total = 0
        try:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="click-reader") as reader:
                upcoming = reader.submit(feed.next)
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
                # A batch read ahead and not stored stays pending for this
                # consumer, which reads it first when it starts again.
                feed.stopping = True
        finally:
            self.release_lock()
        return total


class _Feed:
    """Where the next entries come from, read and parsed in the reader thread."""

    def __init__(self, importer: ClickImporter, *, once: bool):
        self.importer, self.once = importer, once
        self.start = "0"  # first what this consumer read before and never acknowledged
        self.claim_cursor, self.next_claim = "0-0", 0.0
        self.drained = False  # with once: nothing left to read
        self.stopping = False

    def next(self) -> tuple[list[tuple[bytes, dict]], Batch | None]:
        importer = self.importer
        if self.stopping:
            return [], None
        if self.start == ">" and time.monotonic() >= self.next_claim:
            self.claim_cursor, entries = importer.claim(self.claim_cursor)
            if self.claim_cursor == "0-0":
                self.next_claim = time.monotonic() + importer.claim_idle_ms / 2000
        else:
            catching_up = self.start != ">"
            entries = importer.read(self.start, None if (self.once or catching_up) else importer.block_ms)
            if catching_up:
                # Own pending entries, oldest first; the next read starts after
                # these, as they are still pending while they are being stored.
                self.start = entries[-1][0].decode() if entries else ">"
            elif not entries and self.once:
                self.drained = True
        batch = parse_entries(entries, enricher=importer.enricher) if entries else None
        return entries, batch

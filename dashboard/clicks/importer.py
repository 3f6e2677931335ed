"""Moves clicks from the Redis stream into PostgreSQL (docs/contract.md).

Each batch is read with XREADGROUP (or reclaimed from a dead consumer with
XAUTOCLAIM), parsed, enriched and aggregated in a reader thread, written in
one transaction, and acknowledged only after COMMIT:

1. COPY straight into `clicks` and `orphan_visits`. Their primary keys hold
   the click ids, so a batch delivered again after a crash between COMMIT and
   XACK fails that COPY; the batch then goes the slow way (COPY into staging
   tables, INSERT ... ON CONFLICT DO NOTHING RETURNING what was new) and only
   the new clicks are counted;
2. the rollups (docs/rollups.md): the batch's counts, aggregated in Python,
   are COPYed into temporary tables and added with INSERT ... ON CONFLICT DO
   UPDATE; unique visitors are HyperLogLog sketches (the `hll` extension),
   whose union is idempotent.

Acknowledged entries are deleted from the stream (XACK + XDEL in one
MULTI), so the stream only ever holds what is not imported yet.
"""
import gc
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import psycopg
import redis
from django.db import IntegrityError, connection, transaction

from .clickstream import BadEntry, decode_entry
from .enrichment import Enricher, copy_text, stored_user_agent

log = logging.getLogger(__name__)

STREAM = "slingshot:clicks"
GROUP = "importers"
DEAD_LETTER_STREAM = "slingshot:clicks:dead"

# Clicks this far from the importer's clock are refused: a wild timestamp
# would otherwise create a partition decades away.
MAX_CLICK_AGE = timedelta(days=400)
MAX_CLICK_SKEW = timedelta(days=1)
SLUG_MAX = 64
HOUR_MS = 3_600_000

# COPY columns of the lines parse_entry builds.
CLICK_COLUMNS = ("click_id", "occurred_at", "slug", *Enricher.IP_COLUMNS, "user_agent_id", *Enricher.AGENT_COLUMNS,
                 *Enricher.REFERER_COLUMNS, "link_id")
ORPHAN_COLUMNS = ("click_id", "occurred_at", "slug", *Enricher.IP_COLUMNS, "user_agent", "is_bot", "referer")
NULL = "\\N"


class ConsumerBusy(RuntimeError):
    """Another importer runs with the same consumer name."""


class AgentIds:
    """Ids of user agents in `user_agents` (sql/006_user_agents.sql), as COPY
    text, by the `ua` of a click as the edge sent it. Cached; `add` makes and
    looks up the ones not cached yet, in one round trip or two. For one
    thread: the reader's, or the main thread's for a redelivered batch."""

    def __init__(self, lookup: Callable[[list[str]], dict[str, int]], *, max_size: int = 100_000):
        self.lookup = lookup  # stored user agents -> their ids, adding those missing
        self.max_size = max_size
        self.known: dict[str, str] = {}

    def start_batch(self) -> dict[str, str]:
        """The cache, emptied first if it has grown too big: a batch adds to it what it misses."""
        if len(self.known) > self.max_size:
            self.known = {}
        return self.known

    def add(self, raws: set[str]) -> None:
        stored = {raw: stored_user_agent(raw) for raw in raws}
        ids = self.lookup(sorted(set(stored.values())))
        self.known.update((raw, str(ids[agent])) for raw, agent in stored.items())


@dataclass
class Batch:
    entries: list[tuple[bytes, dict]]  # as read from the stream
    ack_ids: list[bytes] = field(default_factory=list)
    dead: list[tuple[bytes, dict, str]] = field(default_factory=list)
    link_ids: dict[str, int] = field(default_factory=dict)  # of the batch's slugs, at parse time
    clicks: int = 0  # not orphan visits
    orphans: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    # COPY data: clicks (CLICK_COLUMNS), orphan visits (ORPHAN_COLUMNS), and
    # what the rollups add: batch_breakdown and batch_visitors.
    click_data: bytes = b""
    orphan_data: bytes = b""
    breakdown_data: bytes = b""
    visitor_data: bytes = b""
    now: datetime | None = None

    @property
    def size(self) -> int:
        return self.clicks + self.orphans


_second_texts: dict[int, str] = {}
_MILLIS = [f".{millis:03d}+00" for millis in range(1000)]


def _second_text(second: int) -> str:
    """COPY text of a timestamptz to the second (UTC), cached: clicks come in order."""
    text = _second_texts.get(second)
    if text is None:
        if len(_second_texts) > 100_000:
            _second_texts.clear()
        text = _second_texts[second] = datetime.fromtimestamp(second, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return text


@dataclass
class _Output:
    """What the clicks of a batch add up to, filled entry by entry."""
    click_lines: list[str] = field(default_factory=list)
    orphan_lines: list[str] = field(default_factory=list)
    visitor_lines: list[str] = field(default_factory=list)
    # Rollup keys, one of each per counted click: (link_id, hour, (browser,
    # os, device, is_bot)), (link_id, hour, referrer host, is_bot) and
    # (link_id, hour, country, is_bot).
    agent_keys: list[tuple] = field(default_factory=list)
    host_keys: list[tuple] = field(default_factory=list)
    country_keys: list[tuple] = field(default_factory=list)


def parse_entry(clicks: list, out: _Output, *, enricher: Enricher, link_ids: dict[str, int],
                agent_ids: dict[str, str], min_ms: int, max_ms: int,
                only: set[str] | None = None) -> tuple[int, int, int, int]:
    """Adds one stream entry's click rows (clickstream.decode_entry) to `out`
    (only those whose ids are in `only`, if given). Returns (clicks, orphan
    visits, first ts, last ts); raises BadEntry, having added nothing, if any
    of it breaks the contract."""
    click_lines, orphan_lines, visitor_lines = [], [], []
    agent_keys, host_keys, country_keys = [], [], []
    first_ms, last_ms = max_ms, min_ms
    ip_facts, agent_facts, referer_facts = enricher.ip, enricher.agent, enricher.referer
    seconds, millis, second_text = _second_texts, _MILLIS, _second_text
    for click_id, ts, slug, ip, ua, ref, orphan in clicks:  # the hot loop: a few µs per click
        if not min_ms <= ts <= max_ms:
            raise BadEntry("click ts is out of range")
        if ts < first_ms:
            first_ms = ts
        if ts > last_ms:
            last_ms = ts
        if not 1 <= len(slug) <= SLUG_MAX:
            raise BadEntry("click slug is not 1 to 64 characters")
        if only is not None:
            if click_id not in only:
                continue
            only.discard(click_id)  # the edge may have sent a click twice: take it once
        ip_text, country, _net, net_hash = ip_facts(ip)
        agent_text, classes, orphan_agent_text, agent_hash = agent_facts(ua)
        referer_text, host, bare_referer_text = referer_facts(ref)
        slug_text = slug
        if "\\" in slug or "\t" in slug or "\n" in slug or "\r" in slug or "\x00" in slug:
            slug_text = copy_text(slug.replace("\x00", ""))
        occurred_at = (seconds.get(ts // 1000) or second_text(ts // 1000)) + millis[ts % 1000]
        if orphan:
            orphan_lines.append(f"{click_id}\t{occurred_at}\t{slug_text}\t{ip_text}\t{orphan_agent_text}\t"
                                f"{bare_referer_text}\n")
            continue
        link_id = link_ids.get(slug)
        if link_id is None:  # the link is gone: stored, not counted
            click_lines.append(f"{click_id}\t{occurred_at}\t{slug_text}\t{ip_text}\t{agent_ids[ua]}\t"
                               f"{agent_text}\t{referer_text}\t{NULL}\n")
            continue
        click_lines.append(f"{click_id}\t{occurred_at}\t{slug_text}\t{ip_text}\t{agent_ids[ua]}\t{agent_text}\t"
                           f"{referer_text}\t{link_id}\n")
        hour = ts // HOUR_MS
        is_bot = classes[3]
        agent_keys.append((link_id, hour, classes))
        host_keys.append((link_id, hour, host, is_bot))
        country_keys.append((link_id, hour, country, is_bot))
        visitor_lines.append(f"{link_id}\t{hour}\t{net_hash ^ agent_hash}\t{'t' if is_bot else 'f'}\n")
    out.click_lines += click_lines
    out.orphan_lines += orphan_lines
    out.visitor_lines += visitor_lines
    out.agent_keys += agent_keys
    out.host_keys += host_keys
    out.country_keys += country_keys
    return len(click_lines), len(orphan_lines), first_ms, last_ms


def parse_entries(entries: list[tuple[bytes, dict]], *, enricher: Enricher,
                  link_ids: Callable[[list[str]], dict[str, int]], agent_ids: AgentIds,
                  now: datetime | None = None, only: set[str] | None = None) -> Batch:
    """Decodes, checks, enriches and aggregates a batch of stream entries into
    COPY data. `link_ids` looks up the links of the batch's slugs (one query),
    `agent_ids` the ids of its user agents not seen before.
    With `only` (a set of lower-case click ids, used up), only those clicks are taken."""
    now = now or datetime.now(timezone.utc)
    min_ms = int((now - MAX_CLICK_AGE).timestamp() * 1000)
    max_ms = int((now + MAX_CLICK_SKEW).timestamp() * 1000)
    batch = Batch(entries=entries, now=now)
    decoded = []
    slugs = set()
    known_agents, new_agents = agent_ids.start_batch(), set()
    for entry_id, fields in entries:
        batch.ack_ids.append(entry_id)
        if not fields:
            continue  # deleted from the stream while pending: nothing to store
        try:
            clicks = decode_entry(fields)
        except BadEntry as exc:
            batch.dead.append((entry_id, fields, str(exc)))
            continue
        decoded.append((entry_id, fields, clicks))
        for _id, _ts, slug, _ip, ua, _ref, orphan in clicks:
            if not orphan:
                slugs.add(slug)
                if ua not in known_agents:
                    new_agents.add(ua)
    batch.link_ids = link_ids(sorted(slugs)) if slugs else {}
    if new_agents:
        agent_ids.add(new_agents)
    out = _Output()
    decoded.reverse()
    while decoded:  # each entry's decoded clicks are let go as soon as they are parsed
        entry_id, fields, clicks = decoded.pop()
        try:
            n_clicks, n_orphans, first_ms, last_ms = parse_entry(
                clicks, out, enricher=enricher, link_ids=batch.link_ids, agent_ids=known_agents, min_ms=min_ms,
                max_ms=max_ms, only=only)
        except BadEntry as exc:
            batch.dead.append((entry_id, fields, str(exc)))
            continue
        if n_clicks or n_orphans:
            batch.clicks += n_clicks
            batch.orphans += n_orphans
            batch.first_ms = first_ms if batch.first_ms is None else min(batch.first_ms, first_ms)
            batch.last_ms = last_ms if batch.last_ms is None else max(batch.last_ms, last_ms)
    batch.click_data = "".join(out.click_lines).encode("utf-8", "replace")
    batch.orphan_data = "".join(out.orphan_lines).encode("utf-8", "replace")
    batch.visitor_data = "".join(out.visitor_lines).encode()
    batch.breakdown_data = breakdown_data(out)
    return batch


def breakdown_data(out: _Output) -> bytes:
    """COPY data of batch_breakdown: (link_id, hour, dimension, value, clicks, human clicks)."""
    totals = defaultdict(lambda: [0, 0])
    for (link_id, hour, (browser, os_family, device, is_bot)), n in Counter(out.agent_keys).items():
        for dimension, value in (("browser", browser), ("os", os_family), ("device", device)):
            total = totals[link_id, hour, dimension, value]
            total[0] += n
            if not is_bot:
                total[1] += n
    for dimension, keys in (("referer_host", out.host_keys), ("country", out.country_keys)):
        for (link_id, hour, value, is_bot), n in Counter(keys).items():
            total = totals[link_id, hour, dimension, value]
            total[0] += n
            if not is_bot:
                total[1] += n
    return "".join(f"{link_id}\t{hour}\t{dimension}\t{copy_text(value)}\t{n}\t{human}\n"
                   for (link_id, hour, dimension, value), (n, human) in totals.items()).encode("utf-8", "replace")


# --- SQL of one batch ----------------------------------------------------------

# Once per connection, before its first temporary table: a batch's
# aggregates are sorted and hashed in memory rather than spilled to disk.
_TEMP_TABLES = """
SET temp_buffers = '64MB';
SET work_mem = '64MB';
CREATE TEMP TABLE IF NOT EXISTS click_staging (LIKE clicks) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS orphan_staging (LIKE orphan_visits) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS batch_breakdown (
    link_id bigint, hour bigint, dimension text, value text, clicks bigint, human_clicks bigint
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS batch_visitors (link_id bigint, hour bigint, visitor bigint, is_bot boolean)
    ON COMMIT DELETE ROWS;
"""
_LINK_IDS = "SELECT slug, id FROM links_link WHERE slug = ANY(%s)"
_AGENT_IDS = "SELECT user_agent, id FROM user_agents WHERE user_agent = ANY(%s)"
# Sorted, so that two importers adding the same agents wait for each other
# rather than deadlock; a row another one added first is left as it is.
_ADD_AGENTS = ("INSERT INTO user_agents (user_agent) SELECT a FROM unnest(%s::text[]) a ORDER BY a "
               "ON CONFLICT (user_agent) DO NOTHING")
_COPY_CLICKS = f"COPY {{table}} ({', '.join(CLICK_COLUMNS)}) FROM STDIN"
_COPY_ORPHANS = f"COPY {{table}} ({', '.join(ORPHAN_COLUMNS)}) FROM STDIN"
_COPY_BREAKDOWN = "COPY batch_breakdown (link_id, hour, dimension, value, clicks, human_clicks) FROM STDIN"
_COPY_VISITORS = "COPY batch_visitors (link_id, hour, visitor, is_bot) FROM STDIN"
# The slow way, after a redelivery: what is new comes back.
_INSERT_NEW_CLICKS = "INSERT INTO clicks SELECT * FROM click_staging ON CONFLICT DO NOTHING RETURNING click_id"
_INSERT_NEW_ORPHANS = "INSERT INTO orphan_visits SELECT * FROM orphan_staging ON CONFLICT DO NOTHING"
_HOUR_BUCKET = "timestamptz 'epoch' + hour * interval '1 hour'"
_DAY_BUCKET = "timestamptz 'epoch' + (hour / 24) * interval '24 hours'"
# HyperLogLog parameters of the visitor sketches (docs/rollups.md): 2^12
# registers of 5 bits, exact up to a few hundred visitors, then within ~1.6%.
HLL = "12, 5"

# Adding to the rollups, from a source of (link_id, bucket, clicks,
# human_clicks, visitor_sketch, human_visitor_sketch) rows, one per key.
# Rows go in key order so that two importers updating the same rollup rows
# lock them in the same order. A visitor count never goes down, nor above the clicks.
_ADD_ROLLUP = """
INSERT INTO click_rollup_{g} AS r (link_id, bucket, clicks, human_clicks, visitors, human_visitors,
                                   visitor_sketch, human_visitor_sketch)
SELECT link_id, bucket, clicks, human_clicks,
       least(clicks, round(hll_cardinality(visitor_sketch))),
       least(human_clicks, round(coalesce(hll_cardinality(human_visitor_sketch), 0))),
       visitor_sketch, human_visitor_sketch
FROM ({source}) s (link_id, bucket, clicks, human_clicks, visitor_sketch, human_visitor_sketch)
ORDER BY 1, 2
ON CONFLICT (link_id, bucket) DO UPDATE SET
    clicks = r.clicks + EXCLUDED.clicks,
    human_clicks = r.human_clicks + EXCLUDED.human_clicks,
    visitor_sketch = hll_union(r.visitor_sketch, EXCLUDED.visitor_sketch),
    human_visitor_sketch = hll_union(r.human_visitor_sketch, EXCLUDED.human_visitor_sketch),
    visitors = greatest(r.visitors, least(
        r.clicks + EXCLUDED.clicks, round(hll_cardinality(hll_union(r.visitor_sketch, EXCLUDED.visitor_sketch))))),
    human_visitors = greatest(r.human_visitors, least(
        r.human_clicks + EXCLUDED.human_clicks,
        round(coalesce(hll_cardinality(hll_union(r.human_visitor_sketch, EXCLUDED.human_visitor_sketch)), 0))))
"""
# ... from a source of (link_id, bucket, dimension, value, clicks, human_clicks), one per key.
_ADD_BREAKDOWN = """
INSERT INTO click_breakdown_{g} AS r (link_id, bucket, dimension, value, clicks, human_clicks)
SELECT * FROM ({source}) s ORDER BY 1, 2, 3, 4
ON CONFLICT (link_id, bucket, dimension, value) DO UPDATE SET
    clicks = r.clicks + EXCLUDED.clicks,
    human_clicks = r.human_clicks + EXCLUDED.human_clicks
"""

# A batch's rollup rows, from its temporary tables; `{late}` keeps the hours
# (since the epoch) of every click, or only those before the day fold's
# `folded_before` (the late clicks, which the day tables take directly).
# Each click is in every dimension once, so the batch's click counts are
# those of any one dimension.
_BATCH_ROLLUP = f"""
WITH counts AS (
    SELECT link_id, {{bucket}} AS bucket, sum(clicks) AS clicks, sum(human_clicks) AS human_clicks
    FROM batch_breakdown WHERE dimension = 'browser' AND {{late}} GROUP BY 1, 2
), sketches AS (
    SELECT link_id, {{bucket}} AS bucket,
           hll_add_agg(visitor::hll_hashval, {HLL}) AS visitor_sketch,
           coalesce(hll_add_agg(visitor::hll_hashval, {HLL}) FILTER (WHERE NOT is_bot), hll_empty({HLL}))
               AS human_visitor_sketch
    FROM batch_visitors WHERE {{late}} GROUP BY 1, 2
)
SELECT c.link_id, c.bucket, c.clicks, c.human_clicks, s.visitor_sketch, s.human_visitor_sketch
FROM counts c JOIN sketches s USING (link_id, bucket)
"""
_BATCH_BREAKDOWN = """
SELECT link_id, {bucket}, dimension, value, sum(clicks), sum(human_clicks)
FROM batch_breakdown WHERE {late} GROUP BY 1, 2, 3, 4
"""
# FOR SHARE: a fold waits for this transaction, or this one sees where the
# fold got to (docs/rollups.md).
_LATE = ("hour < (SELECT extract(epoch FROM folded_before) / 3600 FROM click_day_fold FOR SHARE)")
_TOTALS = """
INSERT INTO link_click_totals AS t (link_id, clicks, human_clicks)
SELECT link_id, sum(clicks), sum(human_clicks)
FROM batch_breakdown WHERE dimension = 'browser' GROUP BY 1 ORDER BY 1
ON CONFLICT (link_id) DO UPDATE SET
    clicks = t.clicks + EXCLUDED.clicks,
    human_clicks = t.human_clicks + EXCLUDED.human_clicks
"""
_ROLLUP_STATEMENTS = [
    _ADD_ROLLUP.format(g="hour", source=_BATCH_ROLLUP.format(bucket=_HOUR_BUCKET, late="true")),
    # batch_breakdown has a row per link, hour, dimension and value already.
    _ADD_BREAKDOWN.format(g="hour", source=f"SELECT link_id, {_HOUR_BUCKET}, dimension, value, clicks, "
                                           "human_clicks FROM batch_breakdown"),
    _ADD_ROLLUP.format(g="day", source=_BATCH_ROLLUP.format(bucket=_DAY_BUCKET, late=_LATE)),
    _ADD_BREAKDOWN.format(g="day", source=_BATCH_BREAKDOWN.format(bucket=_DAY_BUCKET, late=_LATE)),
    _TOTALS,
]

# The day fold: the hours in [folded_before, %(until)s) added to the day tables.
DAY_OF_BUCKET = "date_trunc('day', bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
_FOLDED_HOURS = "bucket >= %(since)s AND bucket < %(until)s"
_FOLD_STATEMENTS = [
    _ADD_ROLLUP.format(g="day", source=f"""
        SELECT link_id, {DAY_OF_BUCKET}, sum(clicks), sum(human_clicks), hll_union_agg(visitor_sketch),
               hll_union_agg(human_visitor_sketch)
        FROM click_rollup_hour WHERE {_FOLDED_HOURS} GROUP BY 1, 2"""),
    _ADD_BREAKDOWN.format(g="day", source=f"""
        SELECT link_id, {DAY_OF_BUCKET}, dimension, value, sum(clicks), sum(human_clicks)
        FROM click_breakdown_hour WHERE {_FOLDED_HOURS} GROUP BY 1, 2, 3, 4"""),
    "UPDATE click_day_fold SET folded_before = %(until)s",
]


# How long after an hour ends import_clicks folds it: the clicks of an hour
# come in within seconds, and any that come later still count (as late clicks).
FOLD_AFTER = timedelta(minutes=10)


def fold_days(*, until: datetime) -> tuple[datetime, datetime]:
    """Adds the closed hours before `until` (rounded down to the hour) that
    are not in the day tables yet; returns the hours folded, [since, until),
    empty if there were none. One transaction; safe to run from several
    importers at once."""
    until = until.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT folded_before FROM click_day_fold")
        since = cursor.fetchone()[0]
        if since >= until:
            return since, since
        with transaction.atomic():
            cursor.execute("SELECT folded_before FROM click_day_fold FOR UPDATE")
            since = cursor.fetchone()[0]
            if since >= until:
                return since, since
            for statement in _FOLD_STATEMENTS:
                cursor.execute(statement, {"since": since, "until": until})
    log.info("folded the hours from %s to %s into the day rollups", since, until)
    return since, until


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


def tune_gc() -> None:
    """For a long-running importer: a batch makes hundreds of thousands of
    short-lived tuples, and the default collector thresholds would scan the
    whole heap many times per batch (~15% of the parse). Everything loaded so
    far (Django, the parsers' regexes) is frozen out of the scans."""
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


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
        self.agent_ids = AgentIds(self.user_agent_ids)

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

    def link_ids(self, slugs: list[str]) -> dict[str, int]:
        """The links of these slugs now. The reader thread asks this on its
        own connection while the main thread stores the previous batch: a link
        deleted in between is still counted for its old id, as if its clicks
        had come a moment earlier."""
        with connection.cursor() as cursor:
            cursor.execute(_LINK_IDS, [slugs])
            return dict(cursor.fetchall())

    def user_agent_ids(self, agents: list[str]) -> dict[str, int]:
        """The ids of these user agents (as stored), adding those not in
        `user_agents` yet. Asked by the reader thread on its own connection,
        which commits the new agents before the batch that uses them (and
        from within the batch's transaction for a redelivered batch, if they
        have left the cache since)."""
        with connection.cursor() as cursor:
            cursor.execute(_AGENT_IDS, [agents])
            ids = dict(cursor.fetchall())
            missing = [agent for agent in agents if agent not in ids]
            if missing:
                # Looked up first, so that agents already there use no identity values.
                cursor.execute(_ADD_AGENTS, [missing])
                cursor.execute(_AGENT_IDS, [missing])
                ids.update(cursor.fetchall())
        return ids

    def parse(self, entries: list[tuple[bytes, dict]], *, only: set[str] | None = None,
              now: datetime | None = None) -> Batch:
        return parse_entries(entries, enricher=self.enricher, link_ids=self.link_ids, agent_ids=self.agent_ids,
                             only=only, now=now)

    def store(self, batch: Batch) -> Stored:
        """Writes a batch's clicks and their rollups in one transaction."""
        if not batch.size:
            return Stored()
        with transaction.atomic(), connection.cursor() as cursor:
            if self._temp_tables_for is not connection.connection:
                cursor.execute(_TEMP_TABLES)
                self._temp_tables_for = connection.connection
            self._ensure_partitions(cursor, batch)
            try:
                with transaction.atomic():
                    self._copy(cursor, _COPY_CLICKS.format(table="clicks"), batch.click_data)
                    self._copy(cursor, _COPY_ORPHANS.format(table="orphan_visits"), batch.orphan_data)
                stored = Stored(clicks=batch.clicks, orphans=batch.orphans)
                counted = batch
            except (IntegrityError, psycopg.errors.UniqueViolation):
                stored, counted = self._store_new(cursor, batch)
            self._copy(cursor, _COPY_BREAKDOWN, counted.breakdown_data)
            self._copy(cursor, _COPY_VISITORS, counted.visitor_data)
            for statement in _ROLLUP_STATEMENTS:
                cursor.execute(statement)
            return stored

    def _store_new(self, cursor, batch: Batch) -> tuple[Stored, Batch]:
        """The slow way, for a batch some of whose clicks are stored already
        (delivered again after a crash between COMMIT and XACK): stores the
        new ones, and returns them parsed again to be counted."""
        self._copy(cursor, _COPY_CLICKS.format(table="click_staging"), batch.click_data)
        self._copy(cursor, _COPY_ORPHANS.format(table="orphan_staging"), batch.orphan_data)
        cursor.execute(_INSERT_NEW_CLICKS)
        new = {row[0].hex for row in cursor.fetchall()}
        cursor.execute(_INSERT_NEW_ORPHANS)
        orphans = cursor.rowcount
        log.info("batch of %d clicks had %d stored already; counting the new ones only",
                 batch.size, batch.size - len(new) - orphans)
        # The same slugs' links and clock as the first parse, and no orphans.
        # Its own agent cache: the reader thread's is in use by the next batch.
        fresh = parse_entries(batch.entries, enricher=self.enricher, link_ids=lambda slugs: batch.link_ids,
                              agent_ids=AgentIds(self.user_agent_ids),
                              now=batch.now, only=new)
        return Stored(clicks=fresh.clicks, orphans=orphans), fresh

    @staticmethod
    def _copy(cursor, statement: str, payload: bytes) -> None:
        if payload:
            with cursor.copy(statement) as copy:
                copy.write(payload)

    # --- the loop ----------------------------------------------------------------

    def process(self, entries: list[tuple[bytes, dict]], batch: Batch | None = None) -> BatchResult:
        """Stores one batch and acknowledges it."""
        batch = batch or self.parse(entries)
        stored = self.store(batch)
        if batch.dead:
            self._dead_letter(batch.dead)
        self._acknowledge(batch.ack_ids)
        return BatchResult(entries=len(entries), clicks=batch.size, stored=stored.clicks + stored.orphans,
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
                    reader.submit(feed.close)
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
        batch = None
        if entries:
            # What a parse makes holds no reference cycles, and is freed by
            # reference counting once its batch is stored; scans of it by the
            # cyclic collector while it grows cost the parse 10 - 20%. The
            # collector runs again between batches.
            gc.disable()
            try:
                batch = importer.parse(entries)
            finally:
                gc.enable()
        return entries, batch

    @staticmethod
    def close() -> None:
        """Closes the reader thread's own database connection."""
        connection.close()

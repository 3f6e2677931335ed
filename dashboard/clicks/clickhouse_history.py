"""Visits of the past (importers/history.py) into the ClickHouse click store
(CLICK_STORE=clickhouse): an import's batch stored in the cluster, each
visit once however often the job is run again, taken over or resumed
after a crash, and added to the links' all-time totals once.

A visit's id is a hash of its source, link and key (history.visit_ids), so
what the cluster holds of a batch's ids is what was stored before: by an
earlier import of the same source, an earlier batch of this one (a source
listing a visit twice), or this very batch, sent before a crash. The store
step of a batch:

1. its rows, made from the job's resumable position and so the same each
   time the batch is made, sorted and without an id twice; and its marker
   (`clickhouse_batches`: a digest of the batch's ids, which a job run
   again from the start, by the command run again, makes the same too);
2. the ids of those rows the cluster holds, read from the replicas the
   inserts go to first (load_balancing in_order), and the rest new;
3. in one PostgreSQL transaction, its user agents into `user_agents`, its
   marker, and unless the marker was there (the batch was counted
   before) the new clicks into the live links' totals; COMMIT;
4. the new rows into the cluster (insert_distributed_sync).

A crash before 3's COMMIT leaves nothing counted, and the batch is made
and decided again; after it, the batch made again finds its marker and
sends what the cluster does not hold yet. The cluster keeps a shard's
month of a batch whole or not at all, so a replica behind the others sends
that part again whole, the same rows, which the replicated table's
insert-block deduplication drops."""

from array import array
from datetime import UTC, datetime, timedelta
from hashlib import blake2b
from uuid import UUID

from django.db import connection, transaction

from .clickhouse_clicks import (
    CLICK_COLUMNS,
    IN_ORDER,
    ORPHAN_COLUMNS,
    cluster,
    counted_per_link,
    naive_utc,
    not_stored,
    orphan_rows,
    using_clickhouse,
)
from .clickhouse_deletions import hidden_clicks
from .clickhouse_import import _ADD_TOTALS, _MARK
from .copy_rows import CopyFormatError, text_rows
from .importer import _LOCK_LINKS, ClickImporter

MARK_STORE = "import"


def history_click_rows(batch) -> list[tuple]:
    """An import's batch of clicks (COPY text, batch.click_columns, each with
    its visitor hash in batch.click_visitors) as rows of ClickHouse's
    `clicks`, sorted as clickhouse_clicks.click_rows sorts them, an id once."""
    visitors = array("q")
    visitors.frombytes(batch.click_visitors)
    lines = text_rows(batch.click_rows, len(batch.click_columns))
    if len(lines) != len(visitors):
        raise CopyFormatError(f"{len(visitors)} visitor hashes for {len(lines)} clicks")
    rows = {}
    for line, visitor in zip(lines, visitors, strict=True):
        click_id, at, slug, link, ip, country, agent, browser, os, device, bot, referer, host, rule, import_id = line
        moment = datetime.strptime(at[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
        row = (UUID(click_id), moment, int(at[20:23]), int(link), int(agent), int(bot == "t"), slug, ip, country)
        rows.setdefault(row[0], row + (browser, os, device, referer, host, rule, int(import_id), visitor, 1))
    return sorted(rows.values(), key=lambda row: (row[3], row[1], row[2], row[0]))


def _once(rows: list[tuple]) -> list[tuple]:
    seen: set[UUID] = set()
    return [row for row in rows if not (row[0] in seen or seen.add(row[0]))]


def _mark_of(clicks: list[tuple], orphans: list[tuple]) -> str:
    """The batch's ids: the same batch of the same source however its job
    goes on (taken over, or made again by the command run again)."""
    digest = blake2b(digest_size=16)
    for row in clicks + orphans:
        digest.update(row[0].bytes)
    return f"{len(clicks)}:{len(orphans)}:{digest.hexdigest()}"


class ClickHouseHistory(ClickImporter):
    """The store step of importers/runner.py with CLICK_STORE=clickhouse."""

    def __init__(self):
        super().__init__(stream=None, maker=None)

    def store(self, batch) -> int:
        """Stores what of the batch the cluster does not hold; returns how many those were."""
        if not batch.size:
            return 0
        clicks, orphans = history_click_rows(batch), _once(orphan_rows(batch))
        mark = _mark_of(clicks, orphans)
        new_clicks, new_orphans = not_stored("clicks", clicks), not_stored("orphan_visits", orphans)
        self._count(batch, mark, new_clicks)
        store = cluster()
        for table, columns, rows in (
            ("clicks", CLICK_COLUMNS, new_clicks),
            ("orphan_visits", ORPHAN_COLUMNS, new_orphans),
        ):
            if rows:
                store.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES", rows, settings=IN_ORDER)
        return len(new_clicks) + len(new_orphans)

    def _count(self, batch, mark: str, new_clicks: list[tuple]) -> None:
        """Its user agents, its marker and, unless the marker was there, its
        new clicks in the links' totals, in one transaction."""
        with transaction.atomic(), connection.cursor() as cursor:
            added_agents = self._agents_add(cursor, batch)
            live, per_link = [], {}
            if batch.link_ids:
                # Held until COMMIT, so that a link deleted meanwhile takes its totals with it.
                cursor.execute(_LOCK_LINKS, [sorted(batch.link_ids)])
                held = [link_id for link_id, _ in cursor.fetchall()]
                per_link = counted_per_link(new_clicks, hidden_clicks(held).before)
                live = [link_id for link_id in held if link_id in per_link]
            cursor.execute(_MARK, {"store": MARK_STORE, "consumer": f"import:{batch.import_id}", "first": mark})
            if cursor.fetchone() and live:
                counts = [per_link[link_id] for link_id in live]
                cursor.execute(_ADD_TOTALS, [live, [n for n, _ in counts], [human for _, human in counts]])
        self._agents_known(added_agents)


def history_store() -> ClickImporter:
    """The store step of an import (importers/runner.py), for the click
    store in use: the click importer's own, without a stream, or the
    cluster's above."""
    return ClickHouseHistory() if using_clickhouse() else ClickImporter(stream=None, maker=None)


def visits_not_stored(ids: list, moments: list[datetime], *, orphans: bool = False) -> int:
    """clicks.visits.visits_not_stored of the cluster: how many of these
    imported visits (click ids, each with its time) it does not hold."""
    if not ids:
        return 0
    wanted = {str(UUID(str(click_id))) for click_id in ids}
    query = (
        f"SELECT count() FROM {'orphan_visits' if orphans else 'clicks'} WHERE occurred_at >= %(first)s"
        " AND occurred_at <= %(last)s AND import_id IS NOT NULL AND toString(click_id) IN %(ids)s"
    )
    params = {
        "first": naive_utc(min(moments) - timedelta(seconds=1)),
        "last": naive_utc(max(moments) + timedelta(seconds=1)),
        "ids": tuple(sorted(wanted)),
    }
    settings = {**IN_ORDER, "max_query_size": max(262_144, len(query) + 40 * len(wanted))}
    ((held,),) = cluster().execute(query, params, settings=settings)
    return len(wanted) - held

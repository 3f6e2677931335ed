"""An installation's clicks and orphan visits moved from PostgreSQL to the
ClickHouse cluster (`manage.py move_clicks`), once CLICK_STORE=clickhouse
has the importer store new ones there (docs/scale-out.md, "Moving to
ClickHouse").

A chunk a transaction. The next chunk of rows after the move's mark
(`clickhouse_moves`, one row a table), in the order of the cluster's sort
key (clicks by link, time and id; orphan visits by slug, time and id),
are read and locked (FOR UPDATE), deleted from PostgreSQL, with the mark
moved past them and, for clicks, their counts taken from the hour rollups
(the accounting's stored clicks), then inserted into the cluster, all in
the transaction that locked them, which commits once the cluster has
them. So at every commit each click is in one store, and the accounting,
which adds the cluster's hours to PostgreSQL's, is unchanged. A move
stopped between a chunk's insert and its commit reads the same rows from
the same mark when it goes on, and leaves out those the cluster holds
(the first chunk of a run, or after a failure, `again`); until then that
chunk's hours count it in both stores.

The visitor hash the cluster's rollup counts is made as the importer makes
it (the address's anonymised network's hash XORed with the user agent's id,
docs/rollups.md), from the address as stored: exact for addresses kept
whole or anonymised; clicks whose team kept no address count by their
user agent alone.

Left in PostgreSQL: the day, six-hour and breakdown rollups (no report
reads them with CLICK_STORE=clickhouse), and the hour rollups of hours a
team's retention purged the raw clicks of, which the accounting still
counts and the cluster's reports do not show."""

import ipaddress
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from uuid import UUID

from django.db import connection, transaction

from .clickhouse_clicks import CLICK_COLUMNS, ORPHAN_COLUMNS, cluster, not_stored
from .enrichment import anonymise, hash64
from .rollups import HOUR_OF

CHUNK = 20_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class Table:
    name: str  # in both stores
    key: tuple[str, ...]  # the cluster's sort key, then the click id: the order of a move
    select: str  # the columns read, as the cluster's row takes them (see _click_row, _orphan_row)
    columns: tuple[str, ...]


CLICKS = Table(
    "clicks",
    ("link_id", "occurred_at", "click_id"),
    "click_id, occurred_at, link_id, user_agent_id, is_bot, slug, host(ip), country, browser, os, device,"
    " referer, referer_host, rule, import_id",
    CLICK_COLUMNS,
)
ORPHANS = Table(
    "orphan_visits",
    ("slug", "occurred_at", "click_id"),
    "click_id, occurred_at, is_bot, slug, host(ip), country, user_agent, referer, kind, domain, import_id",
    ORPHAN_COLUMNS,
)
TABLES = (CLICKS, ORPHANS)

# A table's move begins with its chunk size, committed before any chunk
# goes in: a chunk read again after a stop must be the same rows, so every
# run of the move reads that many, whatever its --rows.
_BEGIN = """
INSERT INTO clickhouse_moves (table_name, chunk_rows) VALUES (%s, %s) ON CONFLICT (table_name) DO NOTHING
"""
_MARK = "SELECT after_key, chunk_rows FROM clickhouse_moves WHERE table_name = %s FOR UPDATE"
_MARK_SET = """
UPDATE clickhouse_moves SET after_key = %(key)s, moved = moved + %(rows)s, moved_at = now() WHERE table_name = %(table)s
"""
# The clicks of a chunk taken from their hours' rollups, as the importer
# added them: clicks and human clicks, the visitor estimates kept at most
# those. Returns the rows it changed, which must be every (link, hour).
_ROLLUPS_TAKE = f"""
WITH moved (link_id, bucket, clicks, humans) AS (
    SELECT link_id, {HOUR_OF.format(moment="occurred_at")}, count(*), count(*) FILTER (WHERE NOT is_bot)
    FROM unnest(%(links)s::bigint[], %(times)s::timestamptz[], %(bots)s::boolean[]) c (link_id, occurred_at, is_bot)
    GROUP BY 1, 2
)
UPDATE click_rollup_hour r SET
    clicks = r.clicks - m.clicks,
    human_clicks = r.human_clicks - m.humans,
    visitors = least(r.visitors, r.clicks - m.clicks),
    human_visitors = least(r.human_visitors, r.human_clicks - m.humans)
FROM moved m WHERE r.link_id = m.link_id AND r.bucket = m.bucket
RETURNING r.link_id, r.bucket, r.clicks
"""
_ROLLUPS_EMPTY = """
DELETE FROM click_rollup_hour
WHERE clicks = 0 AND (link_id, bucket) IN (SELECT * FROM unnest(%s::bigint[], %s::timestamptz[]))
"""


class MoveError(Exception):
    """What PostgreSQL holds does not add up as the move needs: nothing of the chunk moved."""


def _after(table: Table, key) -> tuple[str, list]:
    if key is None:
        return "", []
    key = json.loads(key) if isinstance(key, str) else key
    columns = ", ".join(table.key)
    return f"WHERE ({columns}) > (%s, %s, %s)", [key[0], datetime.fromisoformat(key[1]), UUID(key[2])]


def _key_of(table: Table, row: tuple) -> list:
    """The move's mark after `row` (as read by table.select), as JSON keeps it."""
    first = row[2] if table is CLICKS else row[3]
    return [first, row[1].isoformat(), str(row[0])]


@lru_cache(maxsize=100_000)
def _network_hash(address: str | None) -> int:
    network = ""
    if address:
        try:
            network = anonymise(ipaddress.ip_address(address))
        except ValueError:
            network = ""
    return hash64(network, b"net")


def _second_and_ms(moment: datetime) -> tuple[int, int]:
    ms = (moment - EPOCH) // MS
    return ms // 1000, ms % 1000


def _click_row(row: tuple) -> tuple:
    click_id, at, link_id, agent, is_bot, slug, ip, country, browser, os, device, referer, host, rule, imported = row
    second, ms = _second_and_ms(at)
    visitor = _network_hash(ip) ^ agent
    return (click_id, second, ms, link_id, agent, int(is_bot), slug, ip, country, browser, os, device) + (
        referer,
        host,
        rule,
        imported,
        visitor,
        1,
    )


def _orphan_row(row: tuple) -> tuple:
    click_id, at, is_bot, slug, ip, country, agent, referer, kind, domain, imported = row
    second, ms = _second_and_ms(at)
    return (click_id, second, ms, int(is_bot), slug, ip, country, agent, referer, kind, domain or "", imported)


def _take_from_rollups(cursor, rows: list[tuple]) -> None:
    links = [row[2] for row in rows]
    times = [row[1] for row in rows]
    cursor.execute(_ROLLUPS_TAKE, {"links": links, "times": times, "bots": [row[4] for row in rows]})
    changed = cursor.fetchall()
    hours = {
        (link, at.astimezone(UTC).replace(minute=0, second=0, microsecond=0))
        for link, at in zip(links, times, strict=True)
    }
    if len(changed) != len(hours):
        found = {(link, bucket) for link, bucket, _ in changed}
        link, bucket = min(hours - found)
        raise MoveError(
            f"link {link} has clicks in the hour of {bucket:%Y-%m-%d %H:00} UTC and no hour rollup for them"
        )
    emptied = [(link, bucket) for link, bucket, clicks in changed if clicks == 0]
    if emptied:
        cursor.execute(_ROLLUPS_EMPTY, [[link for link, _ in emptied], [bucket for _, bucket in emptied]])


def begin(table: Table, *, rows: int = CHUNK) -> int:
    """The chunk size of the table's move: `rows`, unless a move began with another."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_BEGIN, [table.name, rows])
        cursor.execute("SELECT chunk_rows FROM clickhouse_moves WHERE table_name = %s", [table.name])
        return cursor.fetchone()[0]


def move_chunk(table: Table, *, again: bool = False, stop_after_insert: Callable[[], None] | None = None) -> int:
    """Moves the next chunk of `table` (after begin); returns how many rows
    moved (0: none left). `again`: the chunk may have been inserted by a
    run stopped before its commit, or by an attempt that failed: the rows
    the cluster holds are left out (clickhouse_clicks.insert_batch says why)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_MARK, [table.name])
        after, rows = cursor.fetchone()
        where, params = _after(table, after)
        order = ", ".join(table.key)
        cursor.execute(
            f"SELECT {table.select} FROM {table.name} {where} ORDER BY {order} LIMIT %s FOR UPDATE", [*params, rows]
        )
        found = cursor.fetchall()
        if not found:
            return 0
        # PostgreSQL's side first, so that rows it refuses (MoveError) never reach the cluster.
        times = [row[1] for row in found]
        cursor.execute(
            f"DELETE FROM {table.name} WHERE click_id = ANY(%s::uuid[]) AND occurred_at >= %s AND occurred_at <= %s",
            [[row[0] for row in found], min(times), max(times)],
        )
        if cursor.rowcount != len(found):
            raise MoveError(f"{len(found)} rows of {table.name} read and {cursor.rowcount} deleted")
        if table is CLICKS:
            _take_from_rollups(cursor, found)
        key = json.dumps(_key_of(table, found[-1]))
        cursor.execute(_MARK_SET, {"table": table.name, "key": key, "rows": len(found)})
        make = _click_row if table is CLICKS else _orphan_row
        moving = [make(row) for row in found]
        cluster().insert(table.name, table.columns, not_stored(table.name, moving) if again else moving)
        if stop_after_insert:
            stop_after_insert()
    return len(found)


def left_before_the_mark(table: Table) -> bool:
    """Rows the mark has passed (stored in PostgreSQL after the move went
    by): the mark is let go, so that the next chunks start over."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT FROM {table.name})")
        if not cursor.fetchone()[0]:
            return False
        cursor.execute("UPDATE clickhouse_moves SET after_key = NULL WHERE table_name = %s", [table.name])
        return True


def estimate_left(table: Table) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(c.reltuples), 0)::bigint FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = %s::regclass AND c.reltuples > 0",
            [table.name],
        )
        return cursor.fetchone()[0]


def moved_so_far() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name, moved FROM clickhouse_moves")
        return dict(cursor.fetchall())

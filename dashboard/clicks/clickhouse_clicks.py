"""Clicks stored in a ClickHouse cluster (CLICK_STORE=clickhouse;
docs/scale-out.md, "ClickHouse"): the importer's batches written to the
cluster's Distributed tables (sql/clickhouse/), each exactly once, and
what the accounting reads back.

Exactly once. A batch goes into `clicks` and `orphan_visits` with
insert_distributed_sync: the node asked splits it by shard and writes each
part to a replica of its shard before it answers, and each shard's
ReplicatedMergeTree drops a part it was given before (insert-block
deduplication: the same rows in the same order). So a batch inserted again
after a crash or a lost connection stores nothing twice, provided it holds
the very same rows. It would not if it were made from other stream entries
(after a crash, the consumer's pending entries include the batch read
ahead, and a claim may cut entries differently), or with another team's
choice of what to keep of an address: before the insert the batch is
recorded in the stream's Redis (clickhouse_batches.py: its entry ids, the time it
was made at and the address choices it was made with), and whoever reads
any of those entries again makes that batch again, from those entries
alone, as it was made. The record goes with the acknowledgement.

Clicks of a link deleted before they are stored are stored all the same:
no report reads them (reports ask by link), and the accounting counts
them as stored, as the edge served them."""

import ipaddress
import logging
import struct
import threading
from array import array
from datetime import UTC, datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from slingshot.errors import StoreUnavailable

from .copy_rows import CopyFormatError, binary_start, text_rows

log = logging.getLogger(__name__)

CLICK_COLUMNS = (
    "click_id",
    "occurred_at",
    "occurred_ms",
    "link_id",
    "user_agent_id",
    "is_bot",
    "slug",
    "ip",
    "country",
    "browser",
    "os",
    "device",
    "referer",
    "referer_host",
    "rule",
    "import_id",
    "visitor_hash",
    "in_breakdowns",  # 1: the breakdown rollup counts it (sql/clickhouse/0002_breakdowns.sql)
)
ORPHAN_COLUMNS = (
    "click_id",
    "occurred_at",
    "occurred_ms",
    "is_bot",
    "slug",
    "ip",
    "country",
    "user_agent",
    "referer",
    "kind",
    "domain",
    "import_id",
)
_INSERT = "INSERT INTO {table} ({columns}) VALUES"
# Reads and inserts go to the same replica of each shard while it answers.
IN_ORDER = {"load_balancing": "in_order"}
# Each table's shard key, and its place in the table's rows.
_SHARD_KEYS = {
    "clicks": ("link_id", CLICK_COLUMNS.index("link_id")),
    "orphan_visits": ("slug", ORPHAN_COLUMNS.index("slug")),
}
_STORED_IDS = (
    "SELECT toString(click_id) FROM {table} WHERE {key} IN %(keys)s"
    " AND occurred_at >= %(first)s AND occurred_at <= %(last)s"
)
# A row's moment in whole milliseconds, from its whole seconds and their
# milliseconds (DateTime: 18.16 has no DateTime64).
MOMENT_MS = "(toUInt64(occurred_at) * 1000 + occurred_ms)"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def moment_ms(moment: datetime) -> int:
    """A moment in whole milliseconds since 1970, as MOMENT_MS counts a row's."""
    return (moment - _EPOCH) // timedelta(milliseconds=1)


# Settings of every query: a Distributed insert answers once each shard
# has its part (or fails, and is sent again whole); a read asks one replica
# of each shard, one that is not behind by more than a few seconds.
SETTINGS = {
    "insert_distributed_sync": 1,
    "insert_distributed_timeout": 60,
    "max_replica_delay_for_distributed_queries": 10,
}


class ClickHouseUnavailable(StoreUnavailable):
    """No node of CLICKHOUSE_URLS took the statement, or the cluster could
    not carry it out now (a shard or ZooKeeper away)."""


# ClickHouse's error codes that say the cluster cannot do it now, not that
# the statement is wrong: SOCKET_TIMEOUT, NETWORK_ERROR, TOO_MANY_SIMULTANEOUS_QUERIES,
# TABLE_IS_READ_ONLY (no ZooKeeper session), ALL_CONNECTION_TRIES_FAILED,
# ALL_REPLICAS_ARE_STALE, NO_ZOOKEEPER, KEEPER_EXCEPTION.
UNAVAILABLE_CODES = {209, 210, 202, 242, 279, 369, 225, 999}


def using_clickhouse() -> bool:
    return settings.CLICK_STORE == "clickhouse"


class ClickHouse:
    """The cluster through whichever node of `urls` answers: each statement
    goes to the node that answered last, then to the others in turn. A
    node's error about the statement itself is raised as it is."""

    def __init__(self, urls: list[str]):
        if not urls:
            raise ImproperlyConfigured("CLICK_STORE=clickhouse needs CLICKHOUSE_URLS")
        self.urls = list(urls)
        self._clients: dict[str, object] = {}
        self._current = 0

    def _client(self, url: str):
        client = self._clients.get(url)
        if client is None:
            client = self._clients[url] = node_client(url)
        return client

    def execute(self, statement: str, params=None, *, settings: dict | None = None):
        from clickhouse_driver.errors import NetworkError, ServerException, SocketTimeoutError

        failures = []
        for step in range(len(self.urls)):
            index = (self._current + step) % len(self.urls)
            url = self.urls[index]
            try:
                answer = self._client(url).execute(statement, params, settings=settings)
            except (NetworkError, SocketTimeoutError, EOFError, OSError) as error:
                self._clients.pop(url, None)
                failures.append(f"{_host(url)}: {error}")
                continue
            except ServerException as error:
                if error.code in UNAVAILABLE_CODES:
                    raise ClickHouseUnavailable(f"{_host(url)}: {str(error).splitlines()[0]}") from error
                raise
            self._current = index
            return answer
        raise ClickHouseUnavailable("no ClickHouse node answered: " + "; ".join(failures))

    def client(self):
        """The clickhouse_driver Client of the node that answered last."""
        return self._client(self.urls[self._current])

    def insert(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        if rows:
            self.execute(_INSERT.format(table=table, columns=", ".join(columns)), rows)


def node_client(url: str):
    """A clickhouse_driver Client of the node at `url`, with SETTINGS."""
    from clickhouse_driver import Client

    client = Client.from_url(url)
    client.settings.update(SETTINGS)
    return client


def _host(url: str) -> str:
    return url.split("@")[-1].split("/")[0]


class _PerThread(threading.local):
    cluster: ClickHouse | None = None


_per_thread = _PerThread()


def cluster() -> ClickHouse:
    """The cluster of CLICKHOUSE_URLS, one per thread: a clickhouse_driver
    Client is one connection, which two statements at once cannot share
    (a dashboard served with threads, `gunicorn --threads`, and a report's
    statements asked at once). Made anew when the setting changed."""
    urls = list(settings.CLICKHOUSE_URLS)
    if _per_thread.cluster is None or _per_thread.cluster.urls != urls:
        _per_thread.cluster = ClickHouse(urls)
    return _per_thread.cluster


def forget_cluster() -> None:
    """This thread's next cluster() is made anew, from the settings of then."""
    _per_thread.cluster = None


_SHORT, _INT, _LONG = (struct.Struct(code).unpack_from for code in ("!h", "!i", "!q"))
PG_EPOCH_MS = 946_684_800_000  # 2000-01-01, where binary COPY's timestamps count from
_ADDRESSES: dict[bytes, str] = {}  # an inet's binary COPY form -> its text
_ADDRESSES_MAX = 100_000


def _address(data: bytes) -> str:
    text = _ADDRESSES.get(data)
    if text is None:
        if len(_ADDRESSES) >= _ADDRESSES_MAX:
            _ADDRESSES.clear()
        text = _ADDRESSES[data] = str(ipaddress.ip_address(data[4:]))
    return text


def click_rows(batch) -> list[tuple]:
    """The batch's clicks as rows of ClickHouse's `clicks` (CLICK_COLUMNS),
    in the order of its sort key, then the click id: the same rows in the
    same order however the batch's entries came. Read straight from the
    batch's binary COPY rows (batch.CLICK_COLUMNS, and an import's id),
    times as whole seconds and their milliseconds, as the driver takes them."""
    payload = batch.click_rows
    if not payload:
        return []
    width = len(batch.click_columns)
    visitors = array("q")
    visitors.frombytes(batch.click_visitors)
    at = binary_start(payload)
    rows = []

    def text() -> str | None:
        nonlocal at
        (size,) = _INT(payload, at)
        at += 4
        if size < 0:
            return None
        at += size
        return payload[at - size : at].decode()

    for visitor in visitors:
        if _SHORT(payload, at)[0] != width:
            raise CopyFormatError(f"a row of other than {width} fields")
        click_id = UUID(bytes=payload[at + 6 : at + 22])
        (micros,) = _LONG(payload, at + 26)
        at += 34
        slug = text()
        (link_id,) = _LONG(payload, at + 4)
        (size,) = _INT(payload, at + 12)
        at += 16
        address = None if size < 0 else _address(payload[at : at + size])
        at += max(size, 0)
        country = text()
        (agent,) = _LONG(payload, at + 4)
        at += 12
        browser, os, device = text(), text(), text()
        is_bot = payload[at + 4]
        at += 5
        referer, host, rule = text(), text(), text()
        import_id = None
        if width > 14:
            (size,) = _INT(payload, at)
            import_id = None if size < 0 else _LONG(payload, at + 4)[0]
            at += 4 + max(size, 0)
        ms = micros // 1000 + PG_EPOCH_MS
        rows.append(
            (click_id, ms // 1000, ms % 1000, link_id, agent, is_bot, slug, address, country, browser, os, device)
            + (referer, host, rule, import_id, visitor, 1)
        )
    if payload[at:] != b"\xff\xff":
        raise CopyFormatError(f"{len(visitors)} visitor hashes for other than as many clicks")
    rows.sort(key=lambda row: (row[3], row[1], row[2], row[0]))
    return rows


def orphan_rows(batch) -> list[tuple]:
    """The batch's orphan visits as rows of ClickHouse's `orphan_visits`
    (ORPHAN_COLUMNS), in the order of its sort key, then the click id."""
    rows = []
    for row in text_rows(batch.orphan_rows, len(batch.orphan_columns)):
        click_id, at, slug, ip, country, agent, is_bot, referer, kind, domain = row[:10]
        import_id = int(row[10]) if len(row) > 10 and row[10] is not None else None
        second, ms = _second_and_ms(_copy_time(at))
        rows.append(
            (
                UUID(click_id),
                second,
                ms,
                int(is_bot == "t"),
                slug,
                ip,
                country,
                agent,
                referer,
                kind,
                domain or "",
                import_id,
            )
        )
    rows.sort(key=lambda row: (row[4], row[1], row[2], row[0]))
    return rows


def _copy_time(text: str) -> datetime:
    """A time as entries.pyx writes it in COPY text: 'YYYY-MM-DD HH:MM:SS.mmm+00'."""
    moment = datetime.strptime(text[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return moment + timedelta(milliseconds=int(text[20:23]))


def naive_utc(moment: datetime) -> datetime:
    """A moment as the driver sends it: its wall-clock time, which the UTC columns read as UTC."""
    return moment.astimezone(UTC).replace(tzinfo=None)


def _second_and_ms(moment: datetime) -> tuple[datetime, int]:
    return moment.replace(microsecond=0), moment.microsecond // 1000


def insert_batch(batch, *, again: bool = False) -> tuple[int, list[tuple]]:
    """Writes a batch's clicks and orphan visits; returns how many rows it
    held, and its clicks' rows (CLICK_COLUMNS). A batch made
    again from its record (`again`: after a crash, a lost connection or a
    claim) sends only the rows the cluster does not hold: deduplication
    drops a block sent again only while its shard remembers it (the latest
    replicated_deduplication_window blocks, 100 on 18.16) and only if it is
    the very same block, which an upgrade in between (the schema, GeoIP,
    the user-agent parser) can change. A shard's part of a batch is stored
    whole or not at all, so what goes again is whole parts, the same rows
    in the same order: a replica behind the one that has it gets a block
    deduplication drops."""
    clicks, orphans = click_rows(batch), orphan_rows(batch)
    store = cluster()
    sent_clicks, sent_orphans = (
        (not_stored("clicks", clicks), not_stored("orphan_visits", orphans)) if again else (clicks, orphans)
    )
    store.insert("clicks", CLICK_COLUMNS, sent_clicks)
    store.insert("orphan_visits", ORPHAN_COLUMNS, sent_orphans)
    return len(clicks) + len(orphans), clicks


def counted_per_link(rows: list[tuple], hidden: dict[int, int]) -> dict[int, list[int]]:
    """Each link's [clicks, human clicks] among rows of CLICK_COLUMNS but
    those a deletion of its visits hides (`hidden`: {link id: the moment in
    ms before which its clicks are hidden}, clickhouse_deletions.py)."""
    per_link: dict[int, list[int]] = {}
    for row in rows:
        if hidden and _row_ms(row) < hidden.get(row[3], 0):
            continue
        counts = per_link.setdefault(row[3], [0, 0])
        counts[0] += 1
        counts[1] += 1 - row[5]
    return per_link


def _row_ms(row: tuple) -> int:
    second = row[1] if isinstance(row[1], int) else int(row[1].timestamp())
    return second * 1000 + row[2]


def not_stored(table: str, rows: list[tuple]) -> list[tuple]:
    """These rows of `table` (`clicks`: of CLICK_COLUMNS; `orphan_visits`:
    of ORPHAN_COLUMNS) but those whose id it holds, in their order; asked
    by the table's shard key and the rows' time range, of the replicas
    inserts go to first while they answer (load_balancing in_order)."""
    if not rows:
        return rows
    key, place = _SHARD_KEYS[table]
    keys = tuple(sorted({row[place] for row in rows}))
    moments = [_naive(row[1]) for row in rows]
    query = _STORED_IDS.format(table=table, key=key)
    settings = {**IN_ORDER, "max_query_size": max(262_144, len(query) + sum(len(str(k)) + 4 for k in keys))}
    params = {"keys": keys, "first": min(moments), "last": max(moments)}
    held = {UUID(found) for (found,) in cluster().execute(query, params, settings=settings)}
    return [row for row in rows if row[0] not in held]


def _naive(moment: int | datetime) -> datetime:
    """A row's occurred_at (epoch seconds, or a moment) as the driver sends it."""
    return datetime.fromtimestamp(moment, UTC).replace(tzinfo=None) if isinstance(moment, int) else naive_utc(moment)

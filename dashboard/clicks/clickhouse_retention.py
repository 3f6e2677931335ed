"""A team's visits past its retention deleted while clicks are stored in
ClickHouse (CLICK_STORE=clickhouse; retention.py runs it in place of
PostgreSQL's purge): its raw clicks from before the cutoff, and with
CLICK_RETENTION_ROLLUPS=purge its hourly rollup's rows of those hours and
its breakdowns of the whole months before the cutoff's. And
CLICK_RETENTION_MONTHS there: the raw tables' old month partitions
dropped (months_drop).

ClickHouse deletes by mutation (`ALTER TABLE ... DELETE`): each shard's
replicas apply it, in their own time, to the parts that were there when
it was made, and 18.16 rewrites a part only if it deletes something of
it (it hard-links the others). So a purge is one mutation a table and
shard for a team, sent to one node of each shard (the replicas of a
shard share their table's ZooKeeper path) and not waited for; a shard
with a mutation of these tables still under way is left for the next
purge, and so is one no node of which answers.

The accounting cannot be told in the same step what a mutation will have
deleted, as PostgreSQL's purge tells it. So a retention on ClickHouse is
at least the accounting's 8 days (teams.models.RETENTION_DAYS_MIN_CLICKHOUSE,
the days the edges keep their counts): what a purge deletes was served
before any hour the accounting compares. A team's shorter retention, set
while its clicks were in PostgreSQL, is purged as 8 days."""

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection

from teams.models import RETENTION_DAYS_MIN_CLICKHOUSE

from .clickhouse_clicks import UNAVAILABLE_CODES, naive_utc, node_client

log = logging.getLogger(__name__)

# Links a mutation names at most: its text goes through ZooKeeper (a node
# holds at most 1 MB) and is parsed by every replica.
LINKS_A_MUTATION = 10_000
# (table, its time column, the first moment kept from the cutoff): the raw
# clicks, and the rollups with CLICK_RETENTION_ROLLUPS=purge.
_CLICKS = ("clicks_local", "occurred_at", "toDateTime(%(cutoff)s, 'UTC')")
_ROLLUPS = (
    ("click_rollup_hour_local", "bucket", "toDateTime(%(cutoff)s, 'UTC')"),
    ("click_breakdown_month_local", "month", "toStartOfMonth(toDateTime(%(cutoff)s, 'UTC'))"),
)
# TABLE_SIZE_EXCEEDS_MAX_DROP_SIZE_LIMIT: a partition past the server's
# max_partition_size_to_drop (50 GB unless set), which it will not drop.
_TOO_LARGE_TO_DROP = 359
_PENDING = (
    "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table IN %(tables)s AND is_done = 0"
)


@dataclass
class Shard:
    name: str  # the clicks table's ZooKeeper path, one a shard
    client: object  # a clickhouse_driver Client of one of its nodes
    busy: bool = False  # a mutation of the purged tables under way


def earliest_cutoff(now: datetime, cutoff: datetime) -> datetime:
    """`cutoff`, or the first instant of the accounting's days if that is
    earlier: a purge deletes nothing the accounting still compares."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return min(cutoff, today - timedelta(days=RETENTION_DAYS_MIN_CLICKHOUSE))


def shards() -> list[Shard]:
    """One answering node of each shard among CLICKHOUSE_URLS, and whether
    a mutation of the purged tables is under way there (the caller
    disconnects their clients)."""
    from clickhouse_driver.errors import Error

    found: dict[str, Shard] = {}
    tables = tuple(table for table, _, _ in (_CLICKS, *_ROLLUPS))
    for url in settings.CLICKHOUSE_URLS:
        client = node_client(url)
        try:
            rows = client.execute(
                "SELECT zookeeper_path FROM system.replicas WHERE database = currentDatabase()"
                " AND table = 'clicks_local'"
            )
            pending = bool(rows) and bool(client.execute(_PENDING, {"tables": tables})[0][0])
        except (Error, EOFError, OSError) as error:
            log.warning("retention purge: ClickHouse node %s did not answer: %s", url.split("@")[-1], error)
            continue
        shard = found.get(rows[0][0]) if rows else None
        if rows and shard is None:
            found[rows[0][0]] = Shard(rows[0][0], client, pending)
            continue
        if shard is not None:
            shard.busy |= pending
        client.disconnect()
    return list(found.values())


def idle_shards() -> list[Shard]:
    """shards() but those with a mutation of the purged tables under way."""
    idle = []
    for shard in shards():
        if shard.busy:
            # One a purge sent is done in seconds or minutes; one still under way a purge later may be stuck.
            log.warning("retention purge: a mutation is under way on %s; its purge waits for the next run", shard.name)
            shard.client.disconnect()
        else:
            idle.append(shard)
    return idle


def months_drop(before: datetime) -> int:
    """CLICK_RETENTION_MONTHS with the clicks in ClickHouse: the raw clicks'
    and orphan visits' month partitions before `before` (a month's first
    instant) dropped on each shard (the replicas follow), as PostgreSQL's
    are (partitions.py); the rollups stay. Returns the rows dropped; a
    shard none of whose nodes answers, or that fails, is left for the
    next day's upkeep and said in the log."""
    from clickhouse_driver.errors import Error, ServerException

    month = before.year * 100 + before.month
    dropped = 0
    for shard in shards():
        try:
            found = shard.client.execute(
                "SELECT table, partition, sum(rows) FROM system.parts WHERE database = currentDatabase() AND active"
                " AND table IN ('clicks_local', 'orphan_visits_local') GROUP BY table, partition ORDER BY 1, 2"
            )
            for table, partition, rows in found:
                if int(partition) >= month:
                    continue
                try:
                    shard.client.execute(f"ALTER TABLE {table} DROP PARTITION {int(partition)}")
                except ServerException as error:
                    if error.code != _TOO_LARGE_TO_DROP:
                        raise
                    log.error(
                        "ClickHouse %s: %s's partition %s is past the server's max_partition_size_to_drop;"
                        " raise it (0: no limit) for the old months to be dropped: %s",
                        shard.name,
                        table,
                        partition,
                        str(error).splitlines()[0],
                    )
                    continue
                log.info("ClickHouse %s: %s's partition %s dropped (%d rows)", shard.name, table, partition, rows)
                dropped += rows
        except (Error, EOFError, OSError) as error:
            _left_for_later(error, "ClickHouse %s: old months not dropped now", shard.name)
        finally:
            shard.client.disconnect()
    return dropped


def _left_for_later(error: Exception, what: str, *args) -> None:
    """A shard's failure, in the log (an error unless the cluster could
    not do it now), for the next run to try again: the importer whose
    upkeep this is goes on importing."""
    from clickhouse_driver.errors import ServerException

    unavailable = not isinstance(error, ServerException) or error.code in UNAVAILABLE_CODES
    (log.warning if unavailable else log.error)(f"{what}: %s", *args, error)


def team_links(team_id: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM links_link WHERE team_id = %s ORDER BY id", [team_id])
        return [link_id for (link_id,) in cursor.fetchall()]


def team_purge(team_id: int, cutoff: datetime, *, rollups: bool, on: list[Shard]) -> tuple[int, int]:
    """Sends the mutations that delete the team's rows from before `cutoff`
    (earliest_cutoff) on each shard of `on` (idle_shards); returns how many
    raw clicks and rows of rollups they delete, counted before they were
    sent. A shard that fails is left for the next purge and said in the
    log."""
    from clickhouse_driver.errors import Error

    links = team_links(team_id)
    tables = [_CLICKS, *(_ROLLUPS if rollups else ())]
    clicks = rollup_rows = 0
    for shard in on:
        try:
            for first in range(0, len(links), LINKS_A_MUTATION):
                params = {"ids": tuple(links[first : first + LINKS_A_MUTATION]), "cutoff": naive_utc(cutoff)}
                for table, moment, kept_from in tables:
                    where = f"link_id IN %(ids)s AND {moment} < {kept_from}"
                    ((found,),) = shard.client.execute(f"SELECT count() FROM {table} WHERE {where}", params)
                    if found:
                        shard.client.execute(f"ALTER TABLE {table} DELETE WHERE {where}", params)
                    if table == _CLICKS[0]:
                        clicks += found
                    else:
                        rollup_rows += found
        except (Error, EOFError, OSError) as error:
            _left_for_later(error, "retention purge: %s could not purge team %d now", shard.name, team_id)
    return clicks, rollup_rows

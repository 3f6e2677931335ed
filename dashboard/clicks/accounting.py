"""Every click accounted for: per UTC hour, the redirects and orphan visits
the edges recorded as clicks (their counts in Redis, contract.SERVED_KEY_PREFIX,
sent by edge/slingshot/accounting.lua) beside the clicks stored for that
hour (the hour rollups, bots included, and orphan_visits; neither with the
visits imported from other shorteners; with CLICK_STORE=clickhouse, those
of the cluster too) and those deleted since
(click_deletions_hour, which every deletion adds to: deletions.py), or
purged with their rollups past their team's retention (retention.py). Once
the importer has caught up, served = stored + deleted + purged; a difference that
stays past ACCOUNTING_GRACE_MINUTES means clicks were lost or removed
behind the dashboard's back after the edge served them
(docs/operations.md, "Every click accounted for"). An hour no
edge counted anything in (before the edges counted, or past the 8 days
Redis keeps the counts) has no difference to show: it is "not counted"."""

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import redis
from django.conf import settings
from django.db import connection

from slingshot.contract import SERVED_FIELDS, SERVED_KEY_PREFIX

from .clickhouse_clicks import using_clickhouse
from .clickhouse_deletions import stored_by_hour
from .rollups import HOUR_OF
from .stores import quick_store

REDIRECT, ORPHAN = SERVED_FIELDS
HOUR = timedelta(hours=1)
# The longest range asked at once: the edge keeps its counts 8 days.
MAX_HOURS = 8 * 24

# Per hour of [start, end): the clicks stored (the hour rollups, less the
# visits imports brought from other shorteners, which no edge served:
# docs/importing.md), the orphan visits stored (but imported ones), what
# was deleted of each, and the clicks purged with their rollups past a
# team's retention; in one statement, each part by its own index. Imported
# visits whose raw clicks a purge took (`imported`) are taken from the
# rollups that still count them, or once those are purged too, from the
# clicks purged, which counted them.
_STORED_AND_DELETED = """
SELECT epoch, clicks - imported + least(imported, purged), orphans, deleted_clicks, deleted_orphans,
       purged - least(imported, purged)
FROM (
    SELECT extract(epoch FROM bucket)::bigint, sum(clicks)::bigint, sum(orphans)::bigint,
           sum(deleted_clicks)::bigint, sum(deleted_orphans)::bigint, sum(purged)::bigint, sum(imported)::bigint
    FROM (
        SELECT bucket, sum(clicks), 0, 0, 0, 0, 0
        FROM click_rollup_hour WHERE bucket >= %(start)s AND bucket < %(end)s GROUP BY bucket
        UNION ALL
        SELECT {hour}, -count(*), 0, 0, 0, 0, 0
        FROM clicks WHERE import_id IS NOT NULL AND occurred_at >= %(start)s AND occurred_at < %(end)s GROUP BY 1
        UNION ALL
        SELECT {hour}, 0, count(*), 0, 0, 0, 0
        FROM orphan_visits WHERE occurred_at >= %(start)s AND occurred_at < %(end)s AND import_id IS NULL GROUP BY 1
        UNION ALL
        SELECT bucket, 0, 0, coalesce(sum(visits) FILTER (WHERE kind IN ('click', 'dropped')), 0),
               coalesce(sum(visits) FILTER (WHERE kind = 'orphan'), 0),
               coalesce(sum(visits) FILTER (WHERE kind = 'purged'), 0),
               coalesce(sum(visits) FILTER (WHERE kind = 'imported'), 0)
        FROM click_deletions_hour WHERE bucket >= %(start)s AND bucket < %(end)s GROUP BY bucket
    ) parts (bucket, clicks, orphans, deleted_clicks, deleted_orphans, purged, imported)
    GROUP BY bucket
) hours (epoch, clicks, orphans, deleted_clicks, deleted_orphans, purged, imported)
""".format(hour=HOUR_OF.format(moment="occurred_at"))


@dataclass(frozen=True)
class HourAccount:
    hour: datetime  # its start, UTC
    served_redirects: int
    served_orphans: int
    stored_clicks: int
    stored_orphans: int
    deleted_clicks: int  # stored (or on their way when their link was deleted), and deleted since
    deleted_orphans: int
    settled: bool  # ended more than the grace period ago: a difference now is one that stays
    counted: bool = True  # some edge counted what it served in this hour
    whole: bool = True  # ... and in the hour before: the count covers the hour from its start
    # Clicks purged with their rollups past their team's retention
    # (clicks/retention.py, CLICK_RETENTION_ROLLUPS=purge): an hour purged, not one with a difference.
    purged_clicks: int = 0

    @property
    def served(self) -> int:
        return self.served_redirects + self.served_orphans

    @property
    def stored(self) -> int:
        return self.stored_clicks + self.stored_orphans

    @property
    def deleted(self) -> int:
        return self.deleted_clicks + self.deleted_orphans

    @property
    def accounted(self) -> int:
        """Stored, or deleted or purged since."""
        return self.stored + self.deleted + self.purged_clicks

    @property
    def difference(self) -> int | None:
        """Served but neither stored nor deleted nor purged (below zero: accounted for
        but never counted as served); None when no edge counted anything in
        the hour."""
        return self.served - self.accounted if self.counted else None

    @property
    def partly_counted(self) -> bool:
        """The first hour the edges counted in, with more accounted for than
        they counted: they began counting within it (an upgrade), and the
        clicks before that were never counted."""
        return self.counted and not self.whole and self.served < self.accounted

    @property
    def lasting(self) -> bool:
        """A settled difference that means clicks went missing or were removed."""
        return self.settled and bool(self.difference) and not self.partly_counted


def served_counts(fields: dict) -> tuple[int, int]:
    """The redirects and orphan visits a served hash holds (a field per edge
    journal and kind, `<journal>:redirect`, and the plain `redirect` and
    `orphan` that edges before journals added to)."""
    sums = {REDIRECT: 0, ORPHAN: 0}
    for field, count in fields.items():
        kind = (field.decode() if isinstance(field, bytes) else field).rpartition(":")[2]
        if kind in sums:
            sums[kind] += int(count)
    return sums[REDIRECT], sums[ORPHAN]


def hour_floor(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)


def accounts(*, client: redis.Redis, start: datetime, end: datetime, now: datetime | None = None) -> list[HourAccount]:
    """One HourAccount for each UTC hour of [start, end), newest first (at
    most MAX_HOURS of them, the latest). One query and one Redis pipeline."""
    now = now or datetime.now(timezone.utc)
    end = min(hour_floor(end - timedelta(microseconds=1)) + HOUR, hour_floor(now) + HOUR)
    start = max(hour_floor(start), end - MAX_HOURS * HOUR)
    hours = []
    hour = start
    while hour < end:
        hours.append(hour)
        hour += HOUR
    # Each edge counts beside its clicks: in the primary, and in each click
    # store of CLICK_STORES. The hour before the first tells whether the
    # first one was counted from its start.
    asked = [start - HOUR, *hours]
    served = [[0, 0] for _ in asked]
    counted = [False for _ in asked]
    for store in [client, *(quick_store(name) for name in settings.CLICK_STORES)]:
        pipe = store.pipeline(transaction=False)
        for hour in asked:
            pipe.hgetall(SERVED_KEY_PREFIX + str(int(hour.timestamp())))
        for index, fields in enumerate(pipe.execute() if hours else []):
            redirects, orphan_visits = served_counts(fields)
            served[index][0] += redirects
            served[index][1] += orphan_visits
            counted[index] = counted[index] or bool(fields)
    with connection.cursor() as cursor:
        cursor.execute(_STORED_AND_DELETED, {"start": start, "end": end})
        found_in_db = {epoch: counts for epoch, *counts in cursor.fetchall()}
    if using_clickhouse():
        # Stored there since the switch, and deleted there; what PostgreSQL stored before stays counted.
        for epoch, in_cluster in stored_by_hour(start, end).items():
            before = found_in_db.get(epoch, (0, 0, 0, 0, 0))
            found_in_db[epoch] = (*(a + b for a, b in zip(before[:4], in_cluster, strict=True)), before[4])
    grace = timedelta(minutes=settings.ACCOUNTING_GRACE_MINUTES)
    found = []
    for index, hour in enumerate(hours, start=1):
        clicks, orphans, deleted_clicks, deleted_orphans, purged = found_in_db.get(
            int(hour.timestamp()), (0, 0, 0, 0, 0)
        )
        found.append(
            HourAccount(
                hour=hour,
                served_redirects=served[index][0],
                served_orphans=served[index][1],
                stored_clicks=clicks,
                stored_orphans=orphans,
                deleted_clicks=deleted_clicks,
                deleted_orphans=deleted_orphans,
                settled=hour + HOUR + grace <= now,
                counted=counted[index],
                whole=counted[index - 1],
                purged_clicks=purged,
            )
        )
    return found[::-1]


def lasting_differences(*, client: redis.Redis, now: datetime | None = None) -> list[HourAccount]:
    """The hours of the last day whose difference has stayed past the grace period."""
    now = now or datetime.now(timezone.utc)
    found = accounts(client=client, start=now - timedelta(days=1), end=now, now=now)
    return [account for account in found if account.lasting]

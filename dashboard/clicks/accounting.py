"""Every click accounted for: per UTC hour, the redirects and orphan visits
the edges recorded as clicks (their counts in Redis, contract.SERVED_KEY_PREFIX,
added by edge/slingshot/accounting.lua) beside the clicks stored for that
hour (the hour rollups, bots included, and orphan_visits). Once the importer
has caught up, the difference is zero; one that stays past
ACCOUNTING_GRACE_MINUTES means clicks were lost or removed after the edge
served them (docs/operations.md, "Every click accounted for")."""

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import redis
from django.conf import settings
from django.db import connection

from slingshot.contract import SERVED_FIELDS, SERVED_KEY_PREFIX

from .stores import quick_store

HOUR = timedelta(hours=1)
# The longest range asked at once: the edge keeps its counts 8 days.
MAX_HOURS = 8 * 24

_STORED = """
SELECT extract(epoch FROM bucket)::bigint, sum(clicks)::bigint
FROM click_rollup_hour WHERE bucket >= %(start)s AND bucket < %(end)s GROUP BY bucket
"""
_ORPHANS = """
SELECT extract(epoch FROM date_trunc('hour', occurred_at))::bigint, count(*)
FROM orphan_visits WHERE occurred_at >= %(start)s AND occurred_at < %(end)s GROUP BY 1
"""


@dataclass(frozen=True)
class HourAccount:
    hour: datetime  # its start, UTC
    served_redirects: int
    served_orphans: int
    stored_clicks: int
    stored_orphans: int
    settled: bool  # ended more than the grace period ago: a difference now is one that stays

    @property
    def served(self) -> int:
        return self.served_redirects + self.served_orphans

    @property
    def stored(self) -> int:
        return self.stored_clicks + self.stored_orphans

    @property
    def difference(self) -> int:
        """Served but not stored (below zero: stored but never counted as served)."""
        return self.served - self.stored


def hour_floor(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)


def accounts(*, client: redis.Redis, start: datetime, end: datetime, now: datetime | None = None) -> list[HourAccount]:
    """One HourAccount for each UTC hour of [start, end), newest first (at
    most MAX_HOURS of them, the latest). Two queries and one Redis pipeline."""
    now = now or datetime.now(timezone.utc)
    end = min(hour_floor(end - timedelta(microseconds=1)) + HOUR, hour_floor(now) + HOUR)
    start = max(hour_floor(start), end - MAX_HOURS * HOUR)
    hours = []
    hour = start
    while hour < end:
        hours.append(hour)
        hour += HOUR
    # Each edge counts beside its clicks: in the primary, and in each click store of CLICK_STORES.
    served = [[0, 0] for _ in hours]
    for store in [client, *(quick_store(name) for name in settings.CLICK_STORES)]:
        pipe = store.pipeline(transaction=False)
        for hour in hours:
            pipe.hmget(SERVED_KEY_PREFIX + str(int(hour.timestamp())), SERVED_FIELDS)
        for sums, counts in zip(served, pipe.execute() if hours else [], strict=True):
            for index, count in enumerate(counts):
                sums[index] += int(count or 0)
    with connection.cursor() as cursor:
        cursor.execute(_STORED, {"start": start, "end": end})
        stored = dict(cursor.fetchall())
        cursor.execute(_ORPHANS, {"start": start, "end": end})
        orphans = dict(cursor.fetchall())
    grace = timedelta(minutes=settings.ACCOUNTING_GRACE_MINUTES)
    found = []
    for hour, (redirects, orphan_visits) in zip(hours, served, strict=True):
        epoch = int(hour.timestamp())
        found.append(
            HourAccount(
                hour=hour,
                served_redirects=int(redirects or 0),
                served_orphans=int(orphan_visits or 0),
                stored_clicks=stored.get(epoch, 0),
                stored_orphans=orphans.get(epoch, 0),
                settled=hour + HOUR + grace <= now,
            )
        )
    return found[::-1]


def lasting_differences(*, client: redis.Redis, now: datetime | None = None) -> list[HourAccount]:
    """The hours of the last day whose difference has stayed past the grace period."""
    now = now or datetime.now(timezone.utc)
    found = accounts(client=client, start=now - timedelta(days=1), end=now, now=now)
    return [account for account in found if account.settled and account.difference]

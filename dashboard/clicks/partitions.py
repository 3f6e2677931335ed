"""The month partitions of the raw click tables (sql/clicks.sql): made ahead
of time and for whatever months a batch's clicks fall in, and dropped after
CLICK_RETENTION_MONTHS (the rollups stay)."""

import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone

from django.db import connection, transaction

log = logging.getLogger(__name__)


@dataclass
class Maintenance:
    partitions_created: int = 0
    partitions_dropped: list[str] = field(default_factory=list)


def months_before(moment: datetime, months: int) -> datetime:
    """The first instant of the UTC month `months` before the month of `moment`."""
    index = moment.year * 12 + moment.month - 1 - months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=timezone.utc)


def click_tables_maintain(*, now: datetime, months_ahead: int, retention_months: int) -> Maintenance:
    """Creates the month partitions up to `months_ahead` months after `now`;
    with retention_months > 0, drops raw click and orphan partitions of months
    that ended more than retention_months months before the current one."""
    result = Maintenance()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT slingshot_ensure_click_partitions(%s, %s)", [now, months_ahead])
        result.partitions_created = cursor.fetchone()[0]
        if retention_months > 0:
            cursor.execute("SELECT slingshot_drop_click_partitions(%s)", [months_before(now, retention_months)])
            result.partitions_dropped = [row[0] for row in cursor.fetchall()]
    if result.partitions_created or result.partitions_dropped:
        log.info(
            "click partitions: %d created, dropped %s",
            result.partitions_created,
            ", ".join(result.partitions_dropped) or "none",
        )
    return result


class MonthPartitions:
    """Makes sure the partitions of a batch's months exist, asking
    PostgreSQL only about months it has not seen yet."""

    def __init__(self):
        self._months: set[int] = set()

    def ensure(self, cursor, first_ms: int, last_ms: int) -> None:
        first = datetime.fromtimestamp(first_ms / 1000, tz=timezone.utc)
        last = datetime.fromtimestamp(last_ms / 1000, tz=timezone.utc)
        months = (last.year - first.year) * 12 + last.month - first.month
        key = first.year * 12 + first.month
        if all(key + i in self._months for i in range(months + 1)):
            return
        cursor.execute("SELECT slingshot_ensure_click_partitions(%s, %s)", [first, months])
        self._months.update(key + i for i in range(months + 1))

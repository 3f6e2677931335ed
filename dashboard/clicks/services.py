"""Writes around the click tables that are not the import itself: partition
upkeep and retention."""
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
    that ended more than retention_months months before the current one (the
    rollups stay)."""
    result = Maintenance()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT slingshot_ensure_click_partitions(%s, %s)", [now, months_ahead])
        result.partitions_created = cursor.fetchone()[0]
        if retention_months > 0:
            cursor.execute("SELECT slingshot_drop_click_partitions(%s)", [months_before(now, retention_months)])
            result.partitions_dropped = [row[0] for row in cursor.fetchall()]
    if result.partitions_created or result.partitions_dropped:
        log.info("click partitions: %d created, dropped %s", result.partitions_created,
                 ", ".join(result.partitions_dropped) or "none")
    return result

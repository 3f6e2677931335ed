"""The accounting (clicks/accounting.py) as a test reads it: forgotten
first, so that a test counts only its own clicks, then read from an hour on."""

from datetime import datetime, timezone

from django.core.management import call_command
from django.db import connection

from clicks.accounting import HourAccount, accounts
from slingshot.contract import SERVED_KEY_PREFIX
from slingshot.redis import get_redis

FIGURES = ("served_redirects", "served_orphans", "stored_clicks", "stored_orphans", "deleted_clicks", "deleted_orphans")


def forget_the_accounting(consumer: str) -> None:
    """What earlier tests left in the stream imported (by `consumer`), then
    forgotten on every side of the accounting: stored, deleted and served.
    A test then counts its own clicks on an edge of its own, whose journals
    have counted nothing yet (an edge sends its hour counts as they stand,
    so a shared one would send again all it counted in the hour)."""
    call_command("import_clicks", "--once", "--consumer", consumer)
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM click_rollup_hour; DELETE FROM orphan_visits; DELETE FROM click_deletions_hour;"
            "DELETE FROM clicks WHERE import_id IS NOT NULL"
        )
    redis = get_redis()
    redis.delete(*redis.keys(SERVED_KEY_PREFIX + "*") or ["none"])


def since(start: datetime) -> list[HourAccount]:
    """Every hour from that of `start` to the current one."""
    now = datetime.now(timezone.utc)
    return accounts(client=get_redis(), start=start, end=now, now=now)


def totals(hours: list[HourAccount]) -> dict[str, int]:
    return {figure: sum(getattr(hour, figure) for hour in hours) for figure in FIGURES}


def even_at(start: datetime, **expected: int) -> list[HourAccount] | None:
    """The hours from `start` on once their figures add up to `expected`
    and none has a difference (None until then)."""
    hours = since(start)
    found = totals(hours)
    done = {figure: found[figure] for figure in expected} == expected
    return hours if done and all(hour.difference == 0 for hour in hours) else None

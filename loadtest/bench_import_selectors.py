"""bench_import.py's last phase: the reads the stats API makes for one link,
timed over rollups written as its traffic would leave them."""

import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from rollup_data import ANALYZE, write_rollups


def bench_selectors(link_id: int, *, days: int = 365, clicks: int = 10_000_000) -> None:
    """The reads the stats API makes, for one link with `clicks` clicks over
    `days` days. Selectors read only rollups, so the rollups are written
    directly, as a year of traffic leaves them (rollup_data.py)."""
    from django.db import connection

    from clicks.reports import link_stats, link_totals

    started = time.perf_counter()
    with connection.cursor() as cursor:
        total = write_rollups(cursor, link_id=link_id, clicks=clicks, days=days)
    connection.set_autocommit(True)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {ANALYZE}")
    print(
        f"  selectors, one link with {total:,} clicks over {days} days (rollups written in "
        f"{time.perf_counter() - started:.1f}s):"
    )
    now = datetime.now(timezone.utc)
    cases = [
        ("link_stats a year by day", dict(start=now - timedelta(days=days), end=now, interval="day")),
        (
            "link_stats a year by day, Asia/Kolkata",
            dict(start=now - timedelta(days=days), end=now, interval="day", zone=ZoneInfo("Asia/Kolkata")),
        ),
        ("link_stats 30 days by hour", dict(start=now - timedelta(days=min(days, 30)), end=now, interval="hour")),
        ("link_stats a year by hour", dict(start=now - timedelta(days=days), end=now, interval="hour")),
        (
            "link_stats 48 hours by hour, bots",
            dict(start=now - timedelta(hours=48), end=now, interval="hour", include_bots=True),
        ),
    ]
    for name, kwargs in cases:
        timings = []
        for _ in range(7):
            began = time.perf_counter()
            link_stats(link_ids=[link_id], **kwargs)
            timings.append(time.perf_counter() - began)
        print(f"    {name:36} median {sorted(timings)[3] * 1000:6.1f} ms")
    timings = []
    for _ in range(7):
        began = time.perf_counter()
        link_totals(link_ids=[link_id])
        timings.append(time.perf_counter() - began)
    print(f"    {'link_totals':36} median {sorted(timings)[3] * 1000:6.1f} ms")

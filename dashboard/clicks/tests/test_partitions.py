"""The month partitions of the raw click tables (clicks/partitions.py),
against the tests' real PostgreSQL."""

import threading
from datetime import datetime, timezone

import psycopg
import pytest
from django.db import connection

from clicks.partitions import MonthPartitions, click_tables_maintain, months_before

pytestmark = pytest.mark.django_db(transaction=True)


def partitions() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent IN ('clicks'::regclass, 'orphan_visits'::regclass)"
        )
        return {row[0] for row in cursor.fetchall()}


def drop(*names: str) -> None:
    with connection.cursor() as cursor:
        for name in names:
            cursor.execute(f"DROP TABLE IF EXISTS {name}")


def test_months_before_crosses_years():
    assert months_before(datetime(2026, 2, 15, tzinfo=timezone.utc), 3) == datetime(2025, 11, 1, tzinfo=timezone.utc)
    assert months_before(datetime(2026, 1, 1, tzinfo=timezone.utc), 0) == datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_a_batch_spanning_months_gets_each_month_asked_for_once(django_assert_num_queries):
    made = MonthPartitions()
    first = int(datetime(2091, 12, 31, 23, tzinfo=timezone.utc).timestamp() * 1000)
    last = int(datetime(2092, 2, 1, 1, tzinfo=timezone.utc).timestamp() * 1000)
    try:
        with django_assert_num_queries(1), connection.cursor() as cursor:
            made.ensure(cursor, first, last)
        with django_assert_num_queries(0), connection.cursor() as cursor:  # known now
            made.ensure(cursor, first, last)
        assert {"clicks_y2091m12", "clicks_y2092m01", "clicks_y2092m02", "orphan_visits_y2092m02"} <= partitions()
    finally:
        drop(
            *(
                f"{table}_y{month}"
                for table in ("clicks", "orphan_visits")
                for month in ("2091m12", "2092m01", "2092m02")
            )
        )


def test_maintenance_makes_months_ahead_and_drops_those_past_retention():
    now = datetime(2093, 6, 15, tzinfo=timezone.utc)
    try:
        ahead = click_tables_maintain(now=now, months_ahead=1, retention_months=0)
        assert ahead.partitions_created == 4 and ahead.partitions_dropped == []
        dropped = click_tables_maintain(
            now=datetime(2093, 9, 1, tzinfo=timezone.utc), months_ahead=0, retention_months=2
        )
        assert {"clicks_y2093m06", "orphan_visits_y2093m06"} <= set(dropped.partitions_dropped)
        assert "clicks_y2093m06" not in partitions()
    finally:
        drop(*(f"{table}_y2093m{month:02d}" for table in ("clicks", "orphan_visits") for month in range(6, 10)))


def test_importers_making_the_same_partition_at_once_both_succeed():
    """Two importers that start together both make next month's partitions:
    the second waits for the first, then finds them made."""
    params = connection.get_connection_params()
    month = datetime(2090, 1, 1, tzinfo=timezone.utc)
    first = psycopg.connect(**params)
    second = psycopg.connect(**params)
    try:
        assert first.execute("SELECT slingshot_ensure_click_partitions(%s, 0)", [month]).fetchone() == (2,)
        outcome = []
        racer = threading.Thread(
            target=lambda: outcome.append(
                second.execute("SELECT slingshot_ensure_click_partitions(%s, 0)", [month]).fetchone()
            )
        )
        racer.start()
        racer.join(timeout=1)
        assert racer.is_alive()  # waiting for the first transaction
        first.commit()
        racer.join(timeout=30)
        assert outcome == [(0,)]  # found them made, no "already exists"
        second.commit()
    finally:
        for conn in (first, second):
            conn.rollback()
        with first.transaction():
            first.execute("DROP TABLE IF EXISTS clicks_y2090m01, orphan_visits_y2090m01")
        first.close()
        second.close()

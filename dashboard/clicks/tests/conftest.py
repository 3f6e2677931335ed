from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from clicks import clickhouse_clicks
from clicks.rollups import ROLLUP_TABLES
from testing.clickhouse import replicas_caught_up
from testing.current_engine import recorded_statements, refused


@pytest.fixture
def fresh_rollups():
    """Empty rollups, and no hour folded into the day tables yet: what a
    test of the fold needs to find, whatever ran before it."""
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(ROLLUP_TABLES)}")
        cursor.execute("UPDATE click_day_fold SET folded_before = 'epoch'")


@pytest.fixture(scope="module")
def current_engine(tmp_path_factory):
    """Every statement the module's tests read the ClickHouse cluster with,
    run again at its end in the current engine (testing/current_engine.py):
    one it refuses is an error of the module's last test."""
    with recorded_statements() as statements:
        yield statements
    if statements:
        assert refused(list(statements), tmp_path_factory.mktemp("chdb")) == []


@pytest.fixture(scope="module")
def migrated(clickhouse_cluster):
    """The session's ClickHouse cluster with sql/clickhouse/ applied (migrate_clicks)."""
    urls = [arg for url in clickhouse_cluster.urls for arg in ("--url", url)]
    call_command("migrate_clicks", *urls, stdout=StringIO())
    return clickhouse_cluster


@pytest.fixture
def clickhouse_store(migrated, settings):
    """CLICK_STORE=clickhouse on the migrated cluster, its replicas caught
    up with what tests before stored, and this thread's connection to it
    (clickhouse_clicks.cluster) made anew before and after."""
    replicas_caught_up(migrated)
    settings.CLICK_STORE, settings.CLICKHOUSE_URLS = "clickhouse", migrated.urls
    clickhouse_clicks.forget_cluster()
    yield migrated
    clickhouse_clicks.forget_cluster()

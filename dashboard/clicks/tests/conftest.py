import pytest
from django.db import connection


@pytest.fixture
def fresh_rollups():
    """Empty rollups, and no hour folded into the day tables yet: what a
    test of the fold needs to find, whatever ran before it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE click_rollup_hour, click_rollup_day, click_rollup_6h, click_breakdown_hour, click_breakdown_day,"
            " link_click_totals"
        )
        cursor.execute("UPDATE click_day_fold SET folded_before = 'epoch'")

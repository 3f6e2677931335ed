import pytest
from django.db import connection

from clicks.rollups import ROLLUP_TABLES


@pytest.fixture
def fresh_rollups():
    """Empty rollups, and no hour folded into the day tables yet: what a
    test of the fold needs to find, whatever ran before it."""
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(ROLLUP_TABLES)}")
        cursor.execute("UPDATE click_day_fold SET folded_before = 'epoch'")

"""A small run of `make bench-importers` (loadtest/bench_importers.py): its
dump and its import as the benchmark makes and times them, checked here
for what they store, not for how fast."""

import sys

import pytest
from django.db import connection

from devstack import REPO

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def bench():
    sys.path.insert(0, str(REPO / "loadtest"))
    try:
        import bench_importers

        yield bench_importers
    finally:
        sys.path.remove(str(REPO / "loadtest"))


@pytest.fixture
def fold_mark_kept():
    """The day fold's mark as it was before the test, whatever the test folded."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT folded_before FROM click_day_fold")
        (mark,) = cursor.fetchone()
    yield
    with connection.cursor() as cursor:
        cursor.execute("UPDATE click_day_fold SET folded_before = %s", [mark])


def test_the_benchmarks_import_stores_every_visit_once(bench, user, tmp_path, fold_mark_kept):
    dump = bench.write_dump(tmp_path, visits=3000, links=50)
    assert bench.parse_only(dump) == 3000

    bench.fold_as_live()
    summary = bench.import_dump(dump, username=user.username, team_id=user.personal_team.pk, name="smoke")
    again = bench.import_dump(dump, username=user.username, team_id=user.personal_team.pk, name="smoke")

    assert (summary.links_created, summary.visits_stored) == (50, 3000)
    assert (again.links_created, again.visits_stored, again.visits_there) == (0, 0, 3000)
    counts = bench.stored_counts(team_id=user.personal_team.pk)
    assert set(counts.values()) == {3000}, counts

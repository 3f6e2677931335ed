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


def test_the_benchmarks_import_stores_every_visit_once(bench, user, tmp_path):
    dump = bench.write_dump(tmp_path, visits=3000, links=50)
    assert bench.parse_only(dump) == 3000

    summary = bench.import_dump(dump, username=user.username, team_id=user.personal_team.pk, name="smoke")
    again = bench.import_dump(dump, username=user.username, team_id=user.personal_team.pk, name="smoke")

    assert (summary.links_created, summary.visits_stored) == (50, 3000)
    assert (again.links_created, again.visits_stored, again.visits_there) == (0, 0, 3000)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), (SELECT sum(t.clicks) FROM link_click_totals t JOIN links_link l ON l.id = t.link_id"
            " WHERE l.team_id = %s) FROM clicks c JOIN links_link l ON l.id = c.link_id WHERE l.team_id = %s",
            [user.personal_team.pk, user.personal_team.pk],
        )
        assert cursor.fetchone() == (3000, 3000)

"""`manage.py move_clicks` on a real cluster (18.16, two shards of two
replicas) and the real PostgreSQL: clicks and orphan visits imported into
PostgreSQL, moved, read the same from ClickHouse (reports, visits one by
one, the campaign report, the links' all-time counts), the accounting's
stored counts unchanged, nothing left behind and nothing twice, also
when the move stops between a chunk's insert and its commit, and when it
is killed over and over."""

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from clicks import clickhouse_clicks
from clicks.accounting import accounts
from clicks.clickhouse_move import CLICKS, ORPHANS, begin, move_chunk
from clicks.reports import link_stats, link_totals
from clicks.visits import VisitsRange, link_clicks, orphan_visits_page
from links.models import Link
from slingshot.redis import get_redis
from teams.models import Team
from teams.services import personal_team
from testing.clickhouse import forget_inserted_blocks
from testing.factories import make_user
from testing.fixtures import database_url
from testing.streams import add_entry, importer

from .test_clickhouse_reports import CASES, DOMAINS, NOW, _clicks, _visits, three_links

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams", "current_engine")]
REPO = Path(__file__).resolve().parents[3]
MINE: list[str] = []  # the orphan visits' domains of the test running


class Stopped(Exception):
    pass


def _in_postgresql() -> list:
    """Three links' clicks and some orphan visits, 1,000 of the last 75 days, imported into PostgreSQL."""
    links = three_links()
    rng = random.Random(uuid.uuid4().int)
    for _ in range(10):
        clicks = _clicks(links, 100, rng)
        for click in clicks:  # the orphan visits on domains of this test's own
            if "domain" in click:
                click["domain"] = DOMAINS.index(click["domain"]) and MINE[1] or MINE[0]
        add_entry(clicks, prefix=uuid.uuid4().hex[:16])
    importer("move-pg").run(once=True)
    return links


def _answers(links) -> list:
    """What the reports, the visits lists and the accounting say of these links."""
    ids = [link.pk for link in links]
    answers = [link_totals(link_ids=ids)]
    for interval, zone, bots, filters in CASES[::6]:
        answers.append(
            link_stats(
                link_ids=ids[:2],
                start=NOW - timedelta(days=40),
                end=NOW + timedelta(hours=1),
                interval=interval,
                include_bots=bots,
                top=3,
                zone=zone,
                filters=filters,
                compare=True,
                now=NOW,
            )
        )
    for span in (VisitsRange(), VisitsRange(include_bots=False)):
        clicks = link_clicks(Link.objects.filter(pk__in=ids), span)
        answers.append((clicks.count(), _visits(clicks[0:50]), _visits(clicks[300:340])))
        for domain in MINE:
            answers.append(orphan_visits_page(span=span, domain=domain, offset=3, limit=30))
    return answers


def _stored_by_hour() -> list[tuple]:
    found = accounts(client=get_redis(), start=NOW - timedelta(days=7), end=NOW + timedelta(hours=1), now=NOW)
    return [(a.hour, a.stored_clicks, a.stored_orphans, a.deleted, a.purged_clicks) for a in found]


def _left_in_postgresql(links) -> tuple[int, int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM clicks")
        clicks = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM orphan_visits")
        orphans = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM click_rollup_hour WHERE link_id = ANY(%s)", [[link.pk for link in links]])
        return clicks, orphans, cursor.fetchone()[0]


def _in_postgresql_now(links) -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM clicks WHERE link_id = ANY(%s)", [[link.pk for link in links]])
        clicks = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM orphan_visits WHERE domain = ANY(%s)", [MINE])
        return clicks, cursor.fetchone()[0]


def _each_once_in_the_cluster(cluster, links, clicks: int, orphans: int) -> None:
    """Each click and orphan visit once, read through the Distributed tables
    (from either replica of a shard, so given a moment to catch up)."""
    node = cluster.nodes[0].client()
    ids = tuple(link.pk for link in links)
    asked = [
        ("SELECT count(), uniqExact(click_id) FROM clicks WHERE link_id IN %(ids)s", {"ids": ids}, clicks),
        ("SELECT count(), uniqExact(click_id) FROM orphan_visits WHERE domain IN %(d)s", {"d": tuple(MINE)}, orphans),
    ]
    for query, params, expected in asked:
        deadline = time.monotonic() + 20
        while (found := node.execute(query, params)) != [(expected, expected)] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert found == [(expected, expected)]
        # On both replicas of each shard, so that a report reading either finds them all.
        local = query.replace("count(), uniqExact(click_id)", "count()").replace(" FROM clicks ", " FROM clicks_local ")
        local = local.replace(" FROM orphan_visits ", " FROM orphan_visits_local ")
        while sum(n.client().execute(local, params)[0][0] for n in cluster.nodes) != 2 * expected:
            assert time.monotonic() < deadline + 20, "not on both replicas"
            time.sleep(0.2)


@pytest.fixture
def before_the_move(migrated, settings):
    """The clicks in PostgreSQL, what is said of them there, and the store switched to the cluster."""
    with connection.cursor() as cursor:
        # Tables without a model of their own, which the tests' flush leaves: this test moves all there is.
        cursor.execute("DELETE FROM clickhouse_moves; DELETE FROM clicks; DELETE FROM orphan_visits")
        cursor.execute("DELETE FROM click_rollup_hour; DELETE FROM click_deletions_hour")
    MINE[:] = [f"mv-{uuid.uuid4().hex[:8]}.example.com" for _ in range(2)]
    links = _in_postgresql()
    counts = _in_postgresql_now(links)
    assert counts[0] > 800 and counts[1] > 50
    on_postgresql = _answers(links)
    settings.CLICK_STORE, settings.CLICKHOUSE_URLS = "clickhouse", migrated.urls
    clickhouse_clicks.forget_cluster()
    accounting = _stored_by_hour()
    assert sum(hour[1] for hour in accounting) > 50
    yield links, counts, on_postgresql, accounting
    clickhouse_clicks.forget_cluster()


def test_moved_clicks_read_the_same_from_the_cluster_and_the_accounting_is_unchanged(migrated, before_the_move):
    links, (clicks, orphans), on_postgresql, accounting = before_the_move
    out = StringIO()
    call_command("move_clicks", "--rows", "97", stdout=out)
    assert f"moved {clicks:,} clicks and {orphans:,} orphan visits" in out.getvalue()
    assert _left_in_postgresql(links) == (0, 0, 0)
    _each_once_in_the_cluster(migrated, links, clicks, orphans)
    assert _stored_by_hour() == accounting
    differ = [i for i, (ours, theirs) in enumerate(zip(_answers(links), on_postgresql, strict=True)) if ours != theirs]
    assert not differ, differ
    again = StringIO()
    call_command("move_clicks", stdout=again)
    assert "moved 0 clicks and 0 orphan visits" in again.getvalue()
    _each_once_in_the_cluster(migrated, links, clicks, orphans)


def test_a_move_stopped_between_its_insert_and_its_commit_stores_that_chunk_once(migrated, before_the_move):
    links, (clicks, orphans), _, accounting = before_the_move

    def stop():
        raise Stopped

    for table in (CLICKS, ORPHANS):
        assert begin(table, rows=40) == 40
        assert move_chunk(table) == 40
        with pytest.raises(Stopped):
            move_chunk(table, stop_after_insert=stop)
    # The stopped chunks are in the cluster and still in PostgreSQL: counted twice until the move goes on,
    # which reads them again in chunks of the size it began with, whatever it is asked for now,
    # and leaves out what the cluster holds, after more inserts than deduplication remembers.
    assert _in_postgresql_now(links) == (clicks - 40, orphans - 40)
    forget_inserted_blocks(migrated)
    out = StringIO()
    call_command("move_clicks", "--rows", "41", stdout=out)
    assert "clicks: chunks of 40 rows, as its move began" in out.getvalue()
    _each_once_in_the_cluster(migrated, links, clicks, orphans)
    assert _stored_by_hour() == accounting


def test_move_clicks_refuses_without_the_cluster_as_the_store(settings):
    settings.CLICK_STORE = "postgresql"
    with pytest.raises(CommandError, match="CLICK_STORE=clickhouse"):
        call_command("move_clicks", stdout=StringIO())


def test_move_clicks_refuses_while_a_team_keeps_its_visits_only_so_many_days(migrated, settings):
    team = personal_team(make_user())
    Team.objects.filter(pk=team.pk).update(visit_retention_days=30)
    settings.CLICK_STORE, settings.CLICKHOUSE_URLS = "clickhouse", migrated.urls

    def marks() -> list[tuple]:  # the moves' marks (the module's earlier moves left theirs)
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM clickhouse_moves ORDER BY table_name")
            return cursor.fetchall()

    before = marks()
    with pytest.raises(CommandError, match=rf"{team.name} \(30 days\).*nothing was moved"):
        call_command("move_clicks", stdout=StringIO())
    assert marks() == before


def _mover(cluster, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CLICK_STORE": "clickhouse",
        "CLICKHOUSE_URLS": ",".join(cluster.urls),
    }
    command = [sys.executable, str(REPO / "dashboard" / "manage.py"), "move_clicks", "--rows", "25"]
    return subprocess.Popen(command, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)


@pytest.mark.slow
def test_move_clicks_killed_over_and_over_moves_each_click_once(migrated, before_the_move, tmp_path):
    links, (clicks, orphans), on_postgresql, accounting = before_the_move
    log = tmp_path / "move.log"
    rng = random.Random()
    kills = 0
    while kills < 4:
        left = _in_postgresql_now(links)
        if left == (0, 0):
            break
        mover = _mover(migrated, log)
        deadline = time.monotonic() + 60
        while _in_postgresql_now(links) == left and mover.poll() is None:  # until it has moved a chunk
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.05)
        time.sleep(rng.uniform(0, 0.1))  # then somewhere in its next chunks
        mover.send_signal(signal.SIGKILL)
        mover.wait(timeout=30)
        kills += 1
    assert kills >= 3, log.read_text()[-2000:]
    last = _mover(migrated, log)
    assert last.wait(timeout=300) == 0, log.read_text()[-3000:]
    assert _left_in_postgresql(links) == (0, 0, 0)
    _each_once_in_the_cluster(migrated, links, clicks, orphans)
    assert _stored_by_hour() == accounting
    assert _answers(links) == on_postgresql

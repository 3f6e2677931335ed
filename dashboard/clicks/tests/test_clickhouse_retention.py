"""A team's retention with CLICK_STORE=clickhouse, on a real cluster (18.16,
two shards of two replicas) and the real PostgreSQL and Redis: the purge
deletes the team's raw clicks from before its cutoff by mutation on each
shard (clicks/clickhouse_retention.py), and the rollups too with
CLICK_RETENTION_ROLLUPS=purge; other teams' clicks, the newer ones and
the accounting's 8 days are untouched; a purge again sends nothing."""

import re
import time
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from clicks.accounting import accounts
from clicks.management.commands.import_clicks import Upkeep
from clicks.partitions import months_before
from clicks.reports import link_stats
from clicks.retention import visits_purge
from clicks.visits import VisitsRange, link_clicks
from links.models import Link
from slingshot.redis import get_redis
from teams.models import Action, AuditEntry, Team
from teams.services import personal_team
from testing.clickhouse import on_every_replica
from testing.factories import make_link, make_user
from testing.streams import add_entry

from .test_clickhouse_import import ch_importer, click, orphan, until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams", "current_engine")]

DAY = timedelta(days=1)
LOCAL = "SELECT count() FROM {table} WHERE link_id = %(link)s"


@pytest.fixture
def cluster(clickhouse_store):
    return clickhouse_store


def _team_link(days: int | None) -> Link:
    owner = make_user()
    Team.objects.filter(pk=personal_team(owner).pk).update(visit_retention_days=days)
    return make_link(owner=owner, url="https://example.org/kept")


def _served(link: Link, *moments: datetime) -> list[dict]:
    return [click(link, ts=int(moment.timestamp() * 1000)) for moment in moments]


def _mutations(cluster) -> list[int]:
    """Each node's mutations of the purged tables: how many, and how many under way."""
    query = "SELECT count(), countIf(is_done = 0) FROM system.mutations WHERE table LIKE 'click%'"
    return [list(node.client().execute(query)[0]) for node in cluster.nodes]


def _done(cluster) -> list[int]:
    deadline = time.monotonic() + 60
    found = _mutations(cluster)
    while any(pending for _, pending in found):
        assert time.monotonic() < deadline, f"the mutations did not finish: {found}"
        time.sleep(0.2)
        found = _mutations(cluster)
    return [count for count, _ in found]


def _held(cluster, link: Link, table: str = "clicks_local") -> int:
    """Rows of the link in `table` on every replica (each shard's two), added up."""
    query = LOCAL.format(table=table)
    return sum(node.client().execute(query, {"link": link.pk})[0][0] for node in cluster.nodes)


def _rolled_up(cluster, link: Link) -> int:
    query = "SELECT countMerge(clicks) FROM click_rollup_hour WHERE link_id = %(link)s"
    return cluster.nodes[0].client().execute(query, {"link": link.pk})[0][0]


def _purged_entries(link: Link) -> list[tuple]:
    return list(
        AuditEntry.objects.filter(team_id=link.team_id, action=Action.VISITS_PURGED).values_list("subject", "changes")
    )


def _window(now: datetime) -> tuple[int, int]:
    hours = accounts(client=get_redis(), start=now - 8 * DAY, end=now + timedelta(hours=1), now=now)
    return sum(hour.stored_clicks for hour in hours), sum(hour.deleted_clicks for hour in hours)


def test_a_teams_clicks_before_its_cutoff_are_deleted_in_the_cluster_and_nothing_else(cluster):
    now = datetime.now(UTC)
    ten_days = _team_link(10)
    short = _team_link(2)  # set while its clicks were in PostgreSQL: purged as 8 days
    forever = _team_link(None)
    old, recent = now - 70 * DAY, now - 3 * DAY
    add_entry(
        _served(ten_days, old, old, old, recent, recent)
        + _served(short, old, recent, recent)
        + _served(forever, old, old, old, old)
    )
    assert ch_importer("ch-retention").run(once=True) == 12
    for link, clicks in ((ten_days, 5), (short, 3), (forever, 4)):
        on_every_replica(cluster, [link.pk], clicks)
    window = _window(now)
    before = _mutations(cluster)

    run = visits_purge(now=now)

    assert run.finished
    assert {(purge.team_id, purge.clicks, purge.rollup_rows) for purge in run.purges} == {
        (ten_days.team_id, 3, 0),
        (short.team_id, 1, 0),
    }
    assert [purge.cutoff for purge in run.purges if purge.team_id == short.team_id] == [
        now.replace(hour=0, minute=0, second=0, microsecond=0) - 8 * DAY
    ]
    _done(cluster)
    # Both replicas of each link's shard: the old clicks gone, the rest kept.
    assert (_held(cluster, ten_days), _held(cluster, short), _held(cluster, forever)) == (4, 4, 8)
    assert link_clicks(Link.objects.filter(pk=ten_days.pk), VisitsRange()).count() == 2
    # The rollups are kept (CLICK_RETENTION_ROLLUPS=keep), as on PostgreSQL: the reports still count them.
    assert _rolled_up(cluster, ten_days) == 5
    stats = link_stats(link_ids=[ten_days.pk], start=now - 80 * DAY, end=now, include_bots=True, top=0)
    assert stats.clicks == 5
    # The accounting's 8 days are untouched: what it compares was served after every cutoff.
    assert _window(now) == window
    assert _purged_entries(ten_days) == [(f"visits before {(now - 10 * DAY).date():%Y-%m-%d}", {"visits": [3, 0]})]
    assert _purged_entries(forever) == []

    # Again: nothing left before the cutoffs, so nothing is sent and nothing recorded.
    mutations = _done(cluster)
    assert mutations != [count for count, _ in before]
    assert visits_purge(now=now).purges == []
    assert _done(cluster) == mutations
    assert len(_purged_entries(ten_days)) == 1


def test_with_the_rollups_purged_too_the_reports_count_only_what_is_kept(cluster, settings):
    settings.CLICK_RETENTION_ROLLUPS = "purge"
    now = datetime.now(UTC)
    link = _team_link(10)
    old, recent = now - 70 * DAY, now - 3 * DAY
    add_entry(_served(link, old, old, recent))
    assert ch_importer("ch-retention-rollups").run(once=True) == 3
    on_every_replica(cluster, [link.pk], 3)
    window = _window(now)

    out = StringIO()
    call_command("purge_visits", stdout=out)

    # Two raw clicks; the rollup's rows of the old hour and its month's breakdowns.
    said = re.fullmatch(
        rf"team {link.team_id}: 2 clicks before {(now - 10 * DAY).date():%Y-%m-%d} sent to ClickHouse's replicas"
        r" to delete, (\d+) rows of rollups\npurged 1 team\n",
        out.getvalue(),
    )
    assert said, out.getvalue()
    rollup_rows = int(said.group(1))
    assert rollup_rows > 1
    _done(cluster)
    assert _held(cluster, link) == 2
    assert _rolled_up(cluster, link) == 1
    # Of the breakdowns, the whole months before the cutoff's.
    months = "SELECT DISTINCT month FROM click_breakdown_month_local WHERE link_id = %(link)s ORDER BY month"
    kept = {row for node in cluster.nodes for row in node.client().execute(months, {"link": link.pk})}
    assert kept == {((now - 3 * DAY).date().replace(day=1),)}
    stats = link_stats(link_ids=[link.pk], start=now - 80 * DAY, end=now, include_bots=True, top=5)
    assert stats.clicks == 1 and sum(n for _, n in stats.breakdowns["country"]) == 1
    assert _window(now) == window
    ((_, changes),) = _purged_entries(link)
    assert changes == {"visits": [2, 0], "rollup_rows": [rollup_rows, 0]}


def test_a_shard_with_a_mutation_under_way_is_left_for_the_next_purge(cluster):
    """A purge sends nothing to a shard where a mutation of the purged
    tables is still under way (here, held back by stopping its replicas'
    merges, which carry mutations out), and counts and records nothing of
    it; once the mutation is done, the clicks are gone."""
    now = datetime.now(UTC)
    link = _team_link(10)
    add_entry(_served(link, now - 70 * DAY, now - 70 * DAY))
    assert ch_importer("ch-retention-busy").run(once=True) == 2
    on_every_replica(cluster, [link.pk], 2)
    query = LOCAL.format(table="clicks_local")
    replicas = [node for node in cluster.nodes if node.client().execute(query, {"link": link.pk})[0][0]]
    assert len(replicas) == 2
    for node in replicas:
        node.client().execute("SYSTEM STOP MERGES clicks_local")
    try:
        ((purge,),) = [visits_purge(now=now).purges]
        assert (purge.team_id, purge.clicks) == (link.team_id, 2)
        sent = _mutations(cluster)
        assert all(pending for node, (_, pending) in zip(cluster.nodes, sent, strict=True) if node in replicas)
        assert visits_purge(now=now).purges == []
        assert _mutations(cluster) == sent and len(_purged_entries(link)) == 1
        assert _held(cluster, link) == 4
    finally:
        for node in replicas:
            node.client().execute("SYSTEM START MERGES clicks_local")
    _done(cluster)
    assert _held(cluster, link) == 0
    assert visits_purge(now=now).purges == []


def test_click_retention_months_drops_the_clusters_old_months_of_clicks_and_orphan_visits(cluster, settings):
    """CLICK_RETENTION_MONTHS with the clicks in ClickHouse: the importer's
    daily upkeep drops the raw clicks' and orphan visits' month partitions
    older than that on every replica, as PostgreSQL's are dropped, and
    keeps the rollups (the reports still count those clicks)."""
    settings.CLICK_RETENTION_MONTHS = 1
    now = datetime.now(UTC)
    link = _team_link(None)
    old, recent = now - 70 * DAY, now - 3 * DAY
    add_entry(_served(link, old, old, recent) + [{**orphan("gone"), "ts": int(old.timestamp() * 1000)}])
    assert ch_importer("ch-retention-months").run(once=True) == 4
    on_every_replica(cluster, [link.pk], 3)
    orphans = "SELECT count() FROM orphan_visits_local WHERE slug = 'gone'"
    # The orphan visit on its shard's two replicas: the second fetches it from the first.
    assert until(lambda: sum(node.client().execute(orphans)[0][0] for node in cluster.nodes), 2, timeout=30) == 2

    Upkeep()()

    assert _held(cluster, link) == 2  # the recent click, on both replicas of its shard
    assert sum(node.client().execute(orphans)[0][0] for node in cluster.nodes) == 0
    old_months = "SELECT count() FROM system.parts WHERE active AND table IN ('clicks_local', 'orphan_visits_local')"
    kept_from = months_before(now, 1)
    first_kept = kept_from.year * 100 + kept_from.month
    assert all(
        node.client().execute(f"{old_months} AND toUInt32(partition) < {first_kept}")[0][0] == 0
        for node in cluster.nodes
    )
    assert _rolled_up(cluster, link) == 3

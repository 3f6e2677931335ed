"""Imports of other shorteners' history into the ClickHouse click store
(clicks/clickhouse_history.py), against a real cluster (18.16, two shards
of two replicas): a YOURLS dump imported into PostgreSQL and the same into
the cluster reads the same in the reports and the visits lists; run again,
taken over after a crash or made again by the command run again, every
visit is stored once and counted once in the links' totals, and the
accounting leaves them out."""

import time
from dataclasses import replace
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from django.db import connection

from clicks import clickhouse_history
from clicks.batch import NULL
from clicks.clickhouse_deletions import stored_by_hour
from clicks.clickhouse_history import ClickHouseHistory
from clicks.enrichment import Enricher
from clicks.importer import ClickImporter
from clicks.reports import LinkStats, link_stats
from clicks.visits import VisitsRange, link_clicks, orphan_visits_page
from importers import runner
from importers.files import files_store
from importers.history import HistoryBatches, Orphan
from importers.jobs import job_create, job_run
from importers.models import ImportJob
from importers.tests.helpers import import_links
from links.models import Link
from teams.services import team_create
from testing.factories import fresh, make_user
from testing.sources import write_yourls_dump, yourls_data

from .test_clickhouse_reports import NOW, _on, _visits

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migrated", "current_engine")]


def _team():
    owner = make_user()
    return owner, team_create(actor=owner, name=fresh("team-"))


def _dump(tmp_path: Path, *, links: int, visits: int, seed: int) -> tuple[Path, int]:
    data = yourls_data(links=links, visits=visits, seed=seed, days=60, now=NOW)
    return write_yourls_dump(tmp_path / f"dump-{seed}.sql", data), len(data.log)


def _held(cluster, ids: list[int], expected: int) -> tuple[int, int]:
    """(clicks, distinct click ids) the cluster holds of these links, once
    both replicas of each shard hold `expected` of them (they may hold more)."""
    local = "SELECT count() FROM clicks_local WHERE link_id IN %(ids)s"
    deadline = time.monotonic() + 30
    while sum(node.client().execute(local, {"ids": tuple(ids)})[0][0] for node in cluster.nodes) < 2 * expected:
        assert time.monotonic() < deadline, "the replicas did not get every visit"
        time.sleep(0.2)
    time.sleep(0.5)  # and anything sent twice, which would come with it
    ((clicks, distinct),) = (
        cluster.nodes[0]
        .client()
        .execute("SELECT count(), uniqExact(click_id) FROM clicks WHERE link_id IN %(ids)s", {"ids": tuple(ids)})
    )
    return clicks, distinct


def _totals(ids: list[int]) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(clicks), 0) FROM link_click_totals WHERE link_id = ANY(%s)", [ids])
        return cursor.fetchone()[0]


def test_imported_visits_read_the_same_from_either_store_and_once_however_often_imported(clickhouse_cluster, tmp_path):
    owner, team = _team()
    dump, visits = _dump(tmp_path, links=8, visits=1200, seed=52)
    urls = clickhouse_cluster.urls

    def run():
        return import_links("yourls", str(dump), user=owner.username, team=str(team.pk))

    assert f"visits: {visits} read, {visits} stored" in _on("postgresql", [], run)
    ids = list(Link.objects.filter(team=team).values_list("pk", flat=True))
    assert _totals(ids) == visits
    hours = (NOW - timedelta(days=61), NOW + timedelta(hours=1))
    served_before = _on("clickhouse", urls, lambda: stored_by_hour(*hours))
    # The links are there: the cluster gets their visits, ids and all, as PostgreSQL did.
    assert f"visits: {visits} read, {visits} stored" in _on("clickhouse", urls, run)
    assert _held(clickhouse_cluster, ids, visits) == (visits, visits)
    assert _totals(ids) == 2 * visits  # both imports added to the one database's totals
    assert _on("clickhouse", urls, lambda: stored_by_hour(*hours)) == served_before  # no edge served these

    def ask():
        answers = []
        for interval, bots, filters in (("day", True, {}), ("hour", False, {}), ("week", True, {"browser": "Firefox"})):
            answers.append(
                link_stats(
                    link_ids=ids,
                    start=NOW - timedelta(days=40),
                    end=NOW,
                    interval=interval,
                    include_bots=bots,
                    top=5,
                    zone=UTC,
                    filters=filters,
                    compare=True,
                    now=NOW,
                )
            )
        for span in (VisitsRange(), VisitsRange(include_bots=False, start=NOW - timedelta(days=20), end=NOW)):
            clicks = link_clicks(Link.objects.filter(pk__in=ids), span)
            answers.append((clicks.count(), _visits(clicks[0:50]), _visits(clicks[300:340])))
        return answers

    on_postgresql, on_clickhouse = _on("postgresql", [], ask), _on("clickhouse", urls, ask)
    assert on_postgresql[0].clicks > 300 and on_postgresql[3][0] == visits and len(on_postgresql[3][2]) == 40
    for index, (theirs, ours) in enumerate(zip(on_postgresql, on_clickhouse, strict=True)):
        if isinstance(theirs, LinkStats):
            (theirs, exact), (ours, sketched) = _visitors_apart(theirs), _visitors_apart(ours)
            # The visitors, within the sketches' error (uniqCombined's, about 1%).
            assert all(abs(a - b) <= a / 100 for a, b in zip(exact, sketched, strict=True)), (index, exact, sketched)
        assert ours == theirs, index

    again = _on("clickhouse", urls, run)
    assert f"{visits} read, 0 stored, {visits} stored before" in again
    dry = _on(
        "clickhouse",
        urls,
        lambda: import_links("yourls", str(dump), user=owner.username, team=str(team.pk), dry_run=True),
    )
    assert "0 would be stored" in dry
    assert _held(clickhouse_cluster, ids, visits) == (visits, visits) and _totals(ids) == 2 * visits


def _visitors_apart(stats: LinkStats) -> tuple[LinkStats, list[int]]:
    """The report without its visitor counts, and those counts."""
    totals = [stats.totals] + ([stats.previous] if stats.previous else [])
    counts = [point.visitors or 0 for point in stats.series] + [each.visitors or 0 for each in totals]
    return replace(
        stats,
        series=[point._replace(visitors=None) for point in stats.series],
        totals=replace(stats.totals, visitors=None),
        previous=stats.previous and replace(stats.previous, visitors=None),
    ), counts


def _job(owner, team, dump: Path) -> ImportJob:
    job = job_create(owner=owner, team=team, source="yourls", options={"name": fresh("y")})
    files_store(job, {"sql": [dump.read_bytes()]})
    return job


def _crash_on(monkeypatch, owner, name: str, call: int, *, done_first: bool) -> None:
    """owner.name raises on its `call`-th call, having done its work or not."""
    work = getattr(owner, name)
    calls = []

    def crashing(*args, **kwargs):
        calls.append(1)
        if len(calls) == call and not done_first:
            raise RuntimeError("crashed")
        answer = work(*args, **kwargs)
        if len(calls) == call:
            raise RuntimeError("crashed")
        return answer

    monkeypatch.setattr(owner, name, crashing)


def _crashed_then(cluster, tmp_path, monkeypatch, *, seed: int, crash: str, then: str) -> None:
    owner, team = _team()
    dump, visits = _dump(tmp_path, links=6, visits=900, seed=seed)
    job = _job(owner, team, dump)
    with monkeypatch.context() as patch:
        if crash == "counted":  # the batch's marker and totals committed, its rows not sent
            _crash_on(patch, ClickHouseHistory, "_count", 3, done_first=True)
        else:  # its rows sent, the job's progress not recorded
            _crash_on(patch, runner.ImportRun, "_consumed", 3, done_first=False)
        with pytest.raises(RuntimeError):
            _on("clickhouse", cluster.urls, lambda: job_run(job))
    if then == "command":
        name = job.options["name"]
        out = _on(
            "clickhouse",
            cluster.urls,
            lambda: import_links("yourls", str(dump), user=owner.username, team=str(team.pk), source_name=name),
        )
        assert f"visits: {visits} read" in out
    else:
        # Taken over, and the replicas read do not show the batch sent before
        # the crash: it is sent again, the same block, which the cluster drops.
        sees = clickhouse_history.not_stored
        blinded = []

        def blind(*args):
            if not blinded:
                blinded.append(args)
                return args[1]  # none of them held, as a replica behind would say
            return sees(*args)

        with monkeypatch.context() as patch:
            patch.setattr(clickhouse_history, "not_stored", blind)
            summary = _on("clickhouse", cluster.urls, lambda: job_run(ImportJob.objects.get(pk=job.pk)))
        assert summary.visits_read == visits and len(blinded[0][1]) == runner.VISITS_BATCH
    ids = list(Link.objects.filter(team=team).values_list("pk", flat=True))
    assert _held(cluster, ids, visits) == (visits, visits), crash
    assert _totals(ids) == visits, crash


def test_a_job_crashed_after_counting_a_batch_and_run_again_stores_and_counts_each_visit_once(
    clickhouse_cluster, tmp_path, monkeypatch
):
    monkeypatch.setattr(runner, "VISITS_BATCH", 150)
    _crashed_then(clickhouse_cluster, tmp_path, monkeypatch, seed=7, crash="counted", then="command")


def test_a_job_crashed_after_storing_a_batch_and_taken_over_stores_and_counts_each_visit_once(
    clickhouse_cluster, tmp_path, monkeypatch
):
    monkeypatch.setattr(runner, "VISITS_BATCH", 150)
    _crashed_then(clickhouse_cluster, tmp_path, monkeypatch, seed=8, crash="recorded", then="takeover")


def test_imported_orphan_visits_are_stored_once_and_read_as_postgresqls(clickhouse_cluster):
    domain = f"{fresh('o')}.example.com"
    orphans = [
        Orphan(
            key=str(n),
            ms=int((NOW - timedelta(hours=n, seconds=n)).timestamp() * 1000),
            path=f"gone{n % 3}",
            domain=domain,
            ip=f"192.0.2.{n}",
            user_agent="Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Firefox/133.0",
            referer="https://news.example.org/a" if n % 2 else "",
            country="FR" if n % 4 else "",
        )
        for n in range(1, 40)
    ]
    orphans.append(orphans[5])  # a source listing one twice

    def batch():
        maker = HistoryBatches(
            enricher=Enricher(ip_privacy="anonymise", enabled=True), import_id=99, source_key="orphans"
        )
        return maker.make((), orphans)

    assert _on("postgresql", [], lambda: ClickImporter(stream=None, maker=None).store(batch())) == 39
    stored = [_on("clickhouse", clickhouse_cluster.urls, lambda: ClickHouseHistory().store(batch())) for _ in range(2)]
    assert stored == [39, 0] and NULL not in domain

    def ask():
        return [
            orphan_visits_page(span=span, domain=domain, offset=2, limit=30)
            for span in (VisitsRange(), VisitsRange(include_bots=False))
        ]

    time.sleep(1)  # both replicas
    on_postgresql, on_clickhouse = _on("postgresql", [], ask), _on("clickhouse", clickhouse_cluster.urls, ask)
    assert len(on_postgresql[0]) == 30 and on_clickhouse == on_postgresql

"""A team's visits past its retention (clicks/retention.py): only that
team's clicks from before its cutoff go, in bounded transactions, the
rollups kept or purged as the operator chose; each purge in the team's
audit log; and the accounting as exact after it as before, the hours purged
with their rollups shown as purged."""

import csv
import io
import re
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from clicks.accounting import accounts
from clicks.models import Click
from clicks.reports import link_stats
from clicks.retention import retention_cutoff, visits_purge
from clicks.rollups import fold_days
from links.models import Link
from slingshot.contract import SERVED_KEY_PREFIX
from slingshot.redis import get_redis
from teams.models import Action, AuditEntry, Team
from testing.factories import api_client, make_link, make_user
from testing.streams import entry
from testing.streams import importer as make_importer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_rollups", "nothing_recorded")]

NOW = datetime.now(timezone.utc)
DAYS = 2
CUTOFF = retention_cutoff(NOW, DAYS)
OLD = CUTOFF - timedelta(days=1, hours=-3)  # an hour the purge takes
OLDER = OLD + timedelta(hours=1)
RECENT = NOW.replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)  # one it keeps
HOURS = (OLD, OLDER, RECENT)


@pytest.fixture
def nothing_recorded():
    """No orphan visit, nothing recorded as deleted, no imported visit (whose rollups fresh_rollups
    took: the accounting would take them from what is stored), nothing counted as served in the
    hours of these tests. `clicks` has no model, so the tests' flush leaves what earlier tests stored."""
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE orphan_visits, click_deletions_hour")
        cursor.execute("DELETE FROM clicks WHERE import_id IS NOT NULL")
    get_redis().delete(*(SERVED_KEY_PREFIX + str(int(hour.timestamp())) for hour in HOURS))


@pytest.fixture
def importer():
    return make_importer("retention-" + uuid.uuid4().hex[:6])


def click(link: Link, at: datetime, minutes: int = 1) -> dict:
    moment = at + timedelta(minutes=minutes)
    return {
        "ts": int(moment.timestamp() * 1000),
        "slug": link.slug,
        "link": link.pk,
        "ip": "203.0.113.7",
        "ua": "pytest",
        "ref": "",
    }


def serve(importer, clicks: list[dict]) -> None:
    """Stores the clicks, and counts them as served as the edge does (edge/slingshot/accounting.lua)."""
    importer.store(importer.maker.make([entry(clicks)]))
    for one in clicks:
        hour = datetime.fromtimestamp(one["ts"] // 1000, timezone.utc).replace(minute=0, second=0)
        get_redis().hincrby(SERVED_KEY_PREFIX + str(int(hour.timestamp())), "retention-test:redirect", 1)


def team_keeping(days: int | None) -> Team:
    team = make_user().personal_team
    Team.objects.filter(pk=team.pk).update(visit_retention_days=days)
    return team


def clicks_of(link: Link) -> list[datetime]:
    return sorted(Click.objects.filter(link_id=link.pk).values_list("occurred_at", flat=True))


def rows_of(table: str, link: Link) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table} WHERE link_id = %s", [link.pk])
        return cursor.fetchone()[0]


def recorded() -> dict[tuple, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT bucket, kind, visits FROM click_deletions_hour")
        return {(bucket, kind): visits for bucket, kind, visits in cursor.fetchall()}


def accounted() -> dict[datetime, tuple]:
    """Per hour of these tests: (served, stored clicks, purged clicks, difference)."""
    found = accounts(client=get_redis(), start=OLD, end=NOW, now=NOW + timedelta(days=1))
    return {
        hour.hour: (hour.served, hour.stored_clicks, hour.purged_clicks, hour.difference)
        for hour in found
        if hour.hour in HOURS and (hour.counted or hour.accounted)
    }


def purges_of(team: Team) -> list[dict]:
    return [
        entry.changes | {"subject": entry.subject}
        for entry in AuditEntry.objects.filter(team=team, action=Action.VISITS_PURGED).order_by("id")
    ]


def test_only_the_teams_clicks_past_its_retention_go_and_its_rollups_stay(importer):
    purging, keeping, forever = team_keeping(DAYS), team_keeping(30), team_keeping(None)
    link, other, kept = (
        make_link(owner=team.personal_for, team=team, url="https://example.com/")
        for team in (purging, keeping, forever)
    )
    serve(importer, [click(one, at) for one in (link, other, kept) for at in (OLD, OLDER, RECENT)])
    before = accounted()

    run = visits_purge(now=NOW, rollups="keep")

    assert run.finished and [(purge.team_id, purge.clicks, purge.rollup_rows) for purge in run.purges] == [
        (purging.pk, 2, 0)
    ]
    assert clicks_of(link) == [RECENT + timedelta(minutes=1)]
    assert len(clicks_of(other)) == len(clicks_of(kept)) == 3
    assert rows_of("click_rollup_hour", link) == 3  # the reports by hour and day still count them
    assert purges_of(purging) == [{"visits": [2, 0], "subject": f"visits before {CUTOFF:%Y-%m-%d}"}]
    assert purges_of(keeping) == purges_of(forever) == []
    # Only raw clicks went: the accounting finds in the rollups what it found before.
    assert accounted() == before == {OLD: (3, 3, 0, 0), OLDER: (3, 3, 0, 0), RECENT: (3, 3, 0, 0)}
    assert recorded() == {}

    # Again: nothing left to delete, and nothing in the audit log.
    assert visits_purge(now=NOW, rollups="keep").purges == []
    assert len(purges_of(purging)) == 1


def test_a_purge_deletes_a_bounded_batch_a_transaction_and_goes_on_where_it_stopped(importer):
    team = team_keeping(DAYS)
    link = make_link(owner=team.personal_for, team=team, url="https://example.com/")
    serve(importer, [click(link, OLD, minutes) for minutes in range(5)] + [click(link, RECENT)])

    first = visits_purge(now=NOW, rollups="keep", rows=2, budget=2)

    assert not first.finished and first.purges[0].clicks == 4
    assert len(clicks_of(link)) == 2
    rest = visits_purge(now=NOW, rollups="keep", rows=2)
    assert rest.finished and rest.purges[0].clicks == 1
    assert clicks_of(link) == [RECENT + timedelta(minutes=1)]
    assert [purge["visits"] for purge in purges_of(team)] == [[4, 0], [1, 0]]


def test_a_purge_stopped_at_its_budget_goes_on_from_where_it_stopped(importer):
    teams = [team_keeping(DAYS) for _ in range(3)]
    links = [make_link(owner=team.personal_for, team=team, url="https://example.com/") for team in teams]
    serve(importer, [click(link, OLD, minutes) for link in links for minutes in range(3)])

    # Each team takes more than seven transactions with its rollups: a run
    # of five never finishes one, and the runs still get through them all.
    runs = [visits_purge(now=NOW, rollups="purge", rows=2, budget=5)]
    while not runs[-1].finished and len(runs) < 20:
        runs.append(visits_purge(now=NOW, rollups="purge", rows=2, budget=5, go_on_from=runs[-1].go_on_from))

    assert runs[-1].finished and len(runs) < 20
    assert [clicks_of(link) for link in links] == [[], [], []]
    assert all(rows_of("click_rollup_hour", link) == 0 for link in links)
    assert [sum(purge["visits"][0] for purge in purges_of(team)) for team in teams] == [3, 3, 3]


def test_purged_with_their_rollups_the_hours_show_as_purged_and_the_accounting_stays_exact(importer):
    purging, keeping = team_keeping(DAYS), team_keeping(None)
    link, other = (
        make_link(owner=team.personal_for, team=team, url="https://example.com/") for team in (purging, keeping)
    )
    serve(importer, [click(one, at, minutes) for one in (link, other) for at in (OLD, RECENT) for minutes in (1, 2)])
    fold_days(until=RECENT)  # the old hour in the day tables and the month breakdowns too
    assert rows_of("click_rollup_day", link) == 1 and rows_of("click_breakdown_day", link) > 0

    run = visits_purge(now=NOW, rollups="purge", rows=3)

    assert run.finished and run.purges[0].clicks == 2 and run.purges[0].rollup_rows > 3
    assert clicks_of(link) == [RECENT + timedelta(minutes=m) for m in (1, 2)]
    for table in ("click_rollup_hour", "click_breakdown_hour", "click_rollup_6h", "click_rollup_day"):
        assert rows_of(table, other) > 0, table
    # The recent hour's rows stay; not yet folded, they are in the hour tables alone.
    assert rows_of("click_rollup_hour", link) == 1
    assert rows_of("click_rollup_day", link) == rows_of("click_rollup_6h", link) == 0
    assert rows_of("click_breakdown_day", link) == 0
    assert recorded() == {(OLD, "purged"): 2}
    assert accounted() == {OLD: (4, 2, 2, 0), RECENT: (4, 4, 0, 0)}
    [audit] = purges_of(purging)
    assert audit["visits"] == [2, 0] and audit["rollup_rows"][0] == run.purges[0].rollup_rows

    # The accounting's page and API say so, the difference nought.
    staff = Client()
    staff.force_login(make_user(is_staff=True))
    page = staff.get(reverse("web:accounting"), {"days": 8}).content.decode()
    row = re.search(rf'<tr data-hour="{re.escape(OLD.isoformat())}"( class="[a-z-]+")?>(.*?)</tr>', page, re.S)
    assert row and row[1] == ' class="purged"', page
    assert "2 purged" in row[2] and re.search(r'class="num difference">0<', row[2])
    hours = staff.get("/api/v1/accounting", {"days": 8}).json()["hours"]
    [old] = [hour for hour in hours if hour["hour"] == OLD.isoformat().replace("+00:00", "Z")]
    assert (old["purged_clicks"], old["stored_clicks"], old["difference"], old["lasting"]) == (2, 2, 0, False)


def test_imported_visits_purged_leave_the_accounting_exact_in_either_mode(importer):
    team = team_keeping(DAYS)
    link = make_link(owner=team.personal_for, team=team, url="https://example.com/")
    serve(importer, [click(link, OLD, minutes) for minutes in (1, 2)])
    # A third visit in the hour, imported from another shortener: no edge served it.
    importer.store(importer.maker.make([entry([click(link, OLD, 3)])]))
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE clicks SET import_id = 1 WHERE link_id = %s AND occurred_at > %s",
            [link.pk, OLD + timedelta(minutes=2)],
        )
    assert accounted() == {OLD: (2, 2, 0, 0)}

    visits_purge(now=NOW, rollups="keep")
    assert clicks_of(link) == [] and recorded() == {(OLD, "imported"): 1}
    assert accounted() == {OLD: (2, 2, 0, 0)}

    visits_purge(now=NOW, rollups="purge")
    assert recorded() == {(OLD, "imported"): 1, (OLD, "purged"): 3}
    assert accounted() == {OLD: (2, 0, 2, 0)}


@pytest.mark.parametrize("rollups", ["keep", "purge"])
def test_the_reports_show_what_remains_after_a_purge(importer, rollups):
    team = team_keeping(DAYS)
    link = make_link(owner=team.personal_for, team=team, url="https://example.com/")
    serve(importer, [click(link, OLD), click(link, OLDER), click(link, RECENT)])
    fold_days(until=RECENT)
    api = api_client(team.personal_for, scope="read")

    visits_purge(now=NOW, rollups=rollups)

    # Read from the raw clicks: the visit list and its export, what remains.
    listed = api.get("/api/v1/clicks", {"link": link.slug}).json()["results"]
    assert [visit["occurred_at"][:16] for visit in listed] == [f"{RECENT:%Y-%m-%dT%H}:01"]
    exported = b"".join(api.get("/api/v1/clicks", {"link": link.slug, "format": "csv"}).streaming_content)
    assert list(csv.DictReader(io.StringIO(exported.decode())))[0]["occurred_at"].startswith(f"{RECENT:%Y-%m-%dT%H}:01")
    assert len(exported.decode().splitlines()) == 2
    # From the rollups, by hour and by day: what the operator kept.
    kept = 3 if rollups == "keep" else 1
    for interval in ("hour", "day"):
        stats = link_stats(link_ids=[link.pk], start=OLD - timedelta(days=1), end=NOW, interval=interval)
        assert stats.clicks == kept, interval
    stats = api.get(f"/api/v1/links/{link.slug}/stats", {"from": (OLD - timedelta(days=1)).isoformat()}).json()
    assert stats["totals"]["clicks"] == kept

"""Visits listed a page at a time, and deleted: a link's with its rollups
and totals, the link staying; orphan visits; each only by whom the rules allow."""

import threading
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction

from clicks import services
from clicks.models import Click
from clicks.reports import link_stats, link_totals
from clicks.rollups import ROLLUP_TABLES, fold_days
from clicks.visits import (
    VisitsRange,
    link_click_counts,
    link_clicks,
    orphan_visit_counts,
    orphan_visits_page,
    visits_not_stored,
)
from links.models import Link
from links.selectors import links_visible_to
from teams.models import Role
from teams.services import member_add
from testing.factories import make_link, make_user
from testing.streams import entry
from testing.streams import importer as make_importer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_rollups")]

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
START = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0) - timedelta(days=2)


def click(link: Link | str, minutes: int, ua: str = BROWSER, **extra) -> dict:
    slug, link_id = (link, None) if isinstance(link, str) else (link.slug, link.pk)
    at = START + timedelta(minutes=minutes)
    return {
        "ts": int(at.timestamp() * 1000),
        "slug": slug,
        "link": link_id,
        "ip": "203.0.113.7",
        "ua": ua,
        "ref": "",
        **extra,
    }


@pytest.fixture
def importer():
    return make_importer("visits-" + uuid.uuid4().hex[:6])


def store(importer, clicks: list[dict]) -> None:
    importer.store(importer.maker.make([entry(clicks)]))


def rollup_rows(link_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT " + " + ".join(f"(SELECT count(*) FROM {table} WHERE link_id = %(id)s)" for table in ROLLUP_TABLES),
            {"id": link_id},
        )
        return cursor.fetchone()[0]


def test_a_links_visits_go_with_their_rollups_and_totals_and_the_link_stays(importer):
    owner = make_user()
    kept, emptied = (
        make_link(owner=owner, url="https://example.com/k"),
        make_link(owner=owner, url="https://example.com/e"),
    )
    store(
        importer, [click(emptied, 1), click(emptied, 2, BOT), click(emptied, 70), click(kept, 3), click(kept, 71, BOT)]
    )
    fold_days(until=START + timedelta(days=1))  # some of them in the day tables too
    assert rollup_rows(emptied.pk) > 0

    assert services.link_visits_delete(link=emptied, actor=owner) == 3

    assert Link.objects.filter(pk=emptied.pk).exists()
    assert rollup_rows(emptied.pk) == 0 and not Click.objects.filter(link_id=emptied.pk).exists()
    assert link_totals(link_ids=[emptied.pk, kept.pk])[kept.pk].clicks == 2
    stats = link_stats(link_ids=[kept.pk], start=START, end=START + timedelta(days=1), include_bots=True)
    assert stats.totals.clicks == 2
    # Clicks stored after it count from nothing.
    store(importer, [click(emptied, 90)])
    assert link_totals(link_ids=[emptied.pk])[emptied.pk].clicks == 1
    assert services.link_visits_delete(link=emptied) == 1


def test_deleting_a_links_visits_takes_an_editor():
    owner, viewer = make_user(), make_user()
    link = make_link(owner=owner, url="https://example.com/")
    member_add(team=owner.personal_team, username=viewer.username, role=Role.VIEWER, actor=owner)
    with pytest.raises(PermissionDenied):
        services.link_visits_delete(link=link, actor=viewer)
    with pytest.raises(PermissionDenied):
        services.link_visits_delete(link=link, actor=make_user())


def test_deleting_visits_waits_for_an_import_holding_the_link(importer):
    """An import's transaction holds the link (FOR KEY SHARE): the deletion
    waits for it to commit, then deletes the clicks it stored too."""
    owner = make_user()
    link = make_link(owner=owner, url="https://example.com/")
    store(importer, [click(link, 1)])
    done = []
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM links_link WHERE id = %s FOR KEY SHARE", [link.pk])

        def delete() -> None:
            try:
                done.append(services.link_visits_delete(link=link))
            finally:
                connection.close()

        thread = threading.Thread(target=delete)
        thread.start()
        time.sleep(0.5)
        assert done == []  # waiting
        importer.store(importer.maker.make([entry([click(link, 2)])]))
    thread.join(timeout=10)
    assert done == [2]
    assert rollup_rows(link.pk) == 0


def test_orphan_visits_are_listed_newest_first_and_deleted_by_staff_only(importer):
    # orphan_visits is no model's table: tests that commit leave theirs in it.
    services.orphan_visits_delete(actor=make_user(is_staff=True))
    store(
        importer,
        [
            click("gone-a", 1, kind="unknown", domain=""),
            click("gone-b", 2, BOT, kind="expired", domain="go.example.com"),
        ],
    )
    rows = orphan_visits_page(span=VisitsRange(start=START), offset=0, limit=10)
    assert [(row.slug, row.kind, row.domain, row.is_bot) for row in rows[:2]] == [
        ("gone-b", "expired", "go.example.com", True),
        ("gone-a", "unknown", "", False),
    ]
    assert orphan_visit_counts(span=VisitsRange(start=START, include_bots=False), domain="").total == 1
    with pytest.raises(PermissionDenied):
        services.orphan_visits_delete(actor=make_user())
    assert services.orphan_visits_delete(actor=make_user(is_staff=True)) >= 2
    assert orphan_visit_counts().total == 0


def test_a_links_clicks_a_page_at_a_time(importer):
    owner = make_user()
    link = make_link(owner=owner, url="https://example.com/")
    store(importer, [click(link, minute) for minute in range(5)] + [click(link, 9, BOT)])
    links = links_visible_to(owner)
    assert [c.occurred_at.minute for c in link_clicks(links, VisitsRange())[:3]] == [9, 4, 3]
    assert link_clicks(links, VisitsRange(include_bots=False)).count() == 5
    span = VisitsRange(start=START + timedelta(minutes=1), end=START + timedelta(minutes=3))
    assert link_clicks(links, span).count() == 3
    assert tuple(link_click_counts(links)) == (6, 1)
    assert link_clicks(links_visible_to(make_user()), VisitsRange()).count() == 0


def test_which_visits_are_stored_already_takes_one_query(importer, django_assert_num_queries):
    link = make_link(owner=make_user(), url="https://example.com/")
    kept, orphan = click(link, 1), click("gone-" + uuid.uuid4().hex[:6], 2, kind="unknown", domain="")
    store(importer, [kept, orphan])

    def served(visit: dict) -> datetime:
        return datetime.fromtimestamp(visit["ts"] / 1000, tz=timezone.utc)

    unknown = uuid.uuid4().hex
    with django_assert_num_queries(1):
        assert visits_not_stored([kept["id"], unknown], [served(kept), served(kept)]) == 1
    assert visits_not_stored([kept["id"]], [served(kept) + timedelta(hours=1)]) == 1  # its id at another time
    assert visits_not_stored([orphan["id"]], [served(orphan)], orphans=True) == 0
    assert visits_not_stored([orphan["id"]], [served(orphan)]) == 1  # not among the links' clicks

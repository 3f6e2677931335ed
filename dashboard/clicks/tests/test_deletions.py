"""Every deletion of stored visits records what it deleted, per hour they
were served in (click_deletions_hour, deletions.py): a link's visits, a
link with its clicks, clicks of a deleted link that reach the importer
after it, orphan visits; exactly what went, whichever of a deletion and an
import holding the same link goes first. The accounting sets the record
beside what is stored, so an hour accounts for as much after a deletion as
before it."""

import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction

from clicks import services
from clicks.accounting import accounts
from clicks.models import Click
from clicks.rollups import fold_days
from links.services import link_delete
from slingshot.redis import get_redis
from testing.factories import make_link, make_user
from testing.streams import entry
from testing.streams import importer as make_importer

from .test_visits import BOT, START, click, store

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_rollups", "no_deletions")]

H0, H1 = START, START + timedelta(hours=1)


@pytest.fixture
def no_deletions():
    """No orphan visit, nothing recorded as deleted and no imported click
    (which the accounting takes from the stored): tests that commit leave
    theirs, the history imports' theirs in these hours too."""
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE orphan_visits, click_deletions_hour")
        cursor.execute("DELETE FROM clicks WHERE import_id IS NOT NULL")


@pytest.fixture
def importer():
    return make_importer("deletions-" + uuid.uuid4().hex[:6])


def recorded() -> dict[tuple, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT bucket, kind, visits FROM click_deletions_hour")
        return {(bucket, kind): visits for bucket, kind, visits in cursor.fetchall()}


def accounted() -> dict:
    """Per hour of H0 and H1: (stored, deleted)."""
    found = accounts(client=get_redis(), start=H0, end=H1 + timedelta(hours=1), now=H1 + timedelta(days=1))
    return {hour.hour: (hour.stored, hour.deleted) for hour in found}


def test_every_deletion_records_what_it_deleted_in_the_hours_it_was_served_in(importer, django_assert_num_queries):
    owner = make_user()
    kept, emptied, gone = (make_link(owner=owner, url=f"https://example.com/{n}") for n in range(3))
    store(
        importer,
        [
            *(click(emptied, minutes) for minutes in (1, 70)),
            click(emptied, 2, BOT),  # bots are clicks the accounting counts too
            click(kept, 3),
            click(gone, 4),
            click(gone, 61),
            click("nowhere", 5, kind="unknown", domain=""),
            click("nowhere", 65, BOT, kind="expired", domain="go.example.com"),
        ],
    )
    fold_days(until=H1 + timedelta(hours=1))  # in the day tables too, which the accounting does not read
    assert accounted() == {H0: (5, 0), H1: (3, 0)}

    assert services.link_visits_delete(link=emptied) == 3
    link_delete(link=gone)
    assert services.orphan_visits_delete() == 2

    assert recorded() == {(H0, "click"): 3, (H1, "click"): 2, (H0, "orphan"): 1, (H1, "orphan"): 1}
    with django_assert_num_queries(1):  # the page is read often: stored and deleted in one query
        assert accounted() == {H0: (1, 4), H1: (0, 3)}  # what each hour accounts for is as it was
    # Deleting again finds nothing, and records nothing.
    assert services.link_visits_delete(link=emptied) == 0 and services.orphan_visits_delete() == 0
    assert accounted() == {H0: (1, 4), H1: (0, 3)}


def test_clicks_that_reach_the_importer_after_their_link_was_deleted_are_recorded_as_dropped(importer):
    owner = make_user()
    live, deleted = (
        make_link(owner=owner, url="https://example.com/l"),
        make_link(owner=owner, url="https://example.com/d"),
    )
    late = [click(deleted, 1), click(deleted, 62, BOT), click(live, 2)]
    again = [dict(one) for one in late]
    link_delete(link=deleted)
    # The same clicks twice in one batch (an edge sending again what it had
    # sent): each is dropped, and counted, once.
    importer.store(importer.maker.make([entry(late, prefix="d" * 16), entry(again, prefix="d" * 16)]))

    assert Click.objects.filter(link_id=late[0]["link"]).count() == 0
    assert Click.objects.filter(link_id=live.pk).count() == 1
    assert recorded() == {(H0, "dropped"): 1, (H1, "dropped"): 1}
    assert accounted() == {H0: (1, 1), H1: (0, 1)}


def _in_a_thread(work) -> tuple[threading.Thread, list]:
    done = []

    def run() -> None:
        try:
            done.append(work())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done


def test_an_import_held_back_by_a_deletion_stores_its_clicks_after_it_and_they_are_not_counted_as_deleted(importer):
    owner = make_user()
    link = make_link(owner=owner, url="https://example.com/")
    store(importer, [click(link, 1)])
    with transaction.atomic():
        assert services.link_visits_delete(link=link) == 1  # the link stays locked until this commits
        thread, done = _in_a_thread(
            lambda: make_importer("deletions-" + uuid.uuid4().hex[:6]).store(
                importer.maker.make([entry([click(link, 2), click(link, 3)])])
            )
        )
        time.sleep(0.5)
        assert done == []  # waiting for the link
    thread.join(timeout=10)
    assert done == [2]
    assert Click.objects.filter(link_id=link.pk).count() == 2
    assert recorded() == {(H0, "click"): 1}
    assert accounted() == {H0: (2, 1), H1: (0, 0)}


def test_a_deletion_held_back_by_an_import_counts_the_clicks_it_stored(importer):
    owner = make_user()
    link = make_link(owner=owner, url="https://example.com/")
    store(importer, [click(link, 1)])
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM links_link WHERE id = %s FOR KEY SHARE", [link.pk])
        thread, done = _in_a_thread(lambda: services.link_visits_delete(link=link))
        time.sleep(0.5)
        assert done == []  # waiting for the import
        importer.store(importer.maker.make([entry([click(link, 2), click(link, 61)])]))
    thread.join(timeout=10)
    assert done == [3]
    assert recorded() == {(H0, "click"): 2, (H1, "click"): 1}
    assert accounted() == {H0: (0, 2), H1: (0, 1)}


def test_transactions_deleting_several_links_take_turns_rather_than_deadlock(importer):
    """A bulk delete takes the record's hours link by link: one hour of the
    first link, an earlier one of the next. Another deletion that wants both
    waits for it, rather than holding the earlier hour and waiting for the
    later: each ends, and every click is recorded."""
    owner = make_user()
    late, early, both = (make_link(owner=owner, url=f"https://example.com/{n}") for n in range(3))
    store(importer, [click(late, 61), click(early, 1), click(both, 2), click(both, 62)])
    with transaction.atomic():
        link_delete(link=late)  # holds H1's row
        thread, done = _in_a_thread(lambda: link_delete(link=both))  # would take H0's, then wait for H1's
        time.sleep(0.5)
        link_delete(link=early)  # wants H0's
    thread.join(timeout=10)
    assert done == [None]
    assert recorded() == {(H0, "click"): 2, (H1, "click"): 2}


def test_an_editor_deletes_a_links_visits_from_its_page_audited_and_accounted(importer, client):
    from teams.models import AuditEntry, Membership, Role

    editor, viewer = make_user(), make_user()
    link = make_link(owner=editor, url="https://example.com/page")
    Membership.objects.create(user=viewer, team_id=link.team_id, role=Role.VIEWER)
    store(importer, [click(link, 1), click(link, 2), click(link, 70)])
    page = f"/links/{link.slug}/visits/delete/"
    client.force_login(viewer)
    assert client.post(page).status_code in (403, 404)  # a viewer may not
    client.force_login(editor)
    asked = client.get(page)
    assert asked.status_code == 200 and "Delete 3 visits" in asked.content.decode()
    done = client.post(page)
    assert done.status_code == 302 and done["Location"] == f"/links/{link.slug}/"
    assert not Click.objects.filter(link=link).exists()
    assert recorded() == {(H0, "click"): 2, (H1, "click"): 1}
    entry = AuditEntry.objects.get(team_id=link.team_id, action="link.visits_deleted")
    assert (entry.actor, entry.slug, entry.changes) == (editor, link.slug, {"visits": [3, 0]})
    assert client.post(page).status_code == 302  # again: nothing to delete, nothing more recorded
    assert AuditEntry.objects.filter(action="link.visits_deleted").count() == 1


def test_a_links_page_counts_the_visits_after_its_end_apart_from_its_clicks(importer, client):
    from datetime import timedelta as later

    from django.utils import timezone

    owner = make_user()
    link = make_link(
        owner=owner,
        url="https://example.com/sale",
        expires_at=timezone.now() + later(days=1),
        expired_url="https://example.com/over",
    )
    store(
        importer,
        [
            click(link, 1),
            click(link.slug, 2, kind="expired", domain=""),
            click(link.slug, 3, kind="limit", domain=""),
            click(link.slug, 4, kind="unknown", domain=""),
            click(link.slug, 5, kind="expired", domain="elsewhere.example"),
        ],
    )
    client.force_login(owner)
    page = client.get(f"/links/{link.slug}/").content.decode()
    assert "2 visits after it expired, sent to https://example.com/over" in page

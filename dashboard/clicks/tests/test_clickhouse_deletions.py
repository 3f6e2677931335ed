"""Visits deleted with CLICK_STORE=clickhouse, on a real cluster (18.16, two
shards of two replicas) and the real PostgreSQL and Redis: the cluster
keeps the rows and every read leaves out the deleted ones
(clicks/clickhouse_deletions.py), through each door that deletes (the
dashboard, Shlink's API), and the accounting counts them as deleted."""

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client

from api.tests.shlink import shlink_client
from clicks.accounting import accounts
from clicks.campaigns import campaign_clicks
from clicks.orphans import visits_after_the_end
from clicks.reports import link_stats, link_totals
from clicks.visits import VisitsRange, link_clicks, orphan_visit_counts
from links.models import Link
from slingshot.redis import get_redis
from testing.clickhouse import on_every_replica
from testing.factories import api_client, make_link, make_user
from testing.streams import add_entry

from .test_clickhouse_import import ch_importer, click, orphan, stored, until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("empty_streams", "current_engine")]


@pytest.fixture
def cluster(clickhouse_store):
    yield clickhouse_store
    with connection.cursor() as cursor:  # not a model's table: the tests' flush leaves it
        cursor.execute("DELETE FROM clickhouse_deletions")


def _at(moment: datetime, **more) -> dict:
    return {"ts": int(moment.timestamp() * 1000), **more}


def test_a_links_deleted_visits_are_left_out_of_every_read_and_counted_deleted_late_ones_too(cluster):
    """Shlink's DELETE of a link's visits: its reports, visits, export,
    campaign clicks and all-time total start again from nothing while the
    cluster keeps the rows; the accounting moves them from stored to
    deleted. A click served before the deletion and stored after it (still
    in the stream) is deleted too; one served after it counts. Another
    link's clicks are untouched, and deleting again hides what came since."""
    owner = make_user()
    link = make_link(owner=owner, url="https://shop.example/a?utm_campaign=spring&utm_source=mail")
    other = make_link(owner=owner, url="https://example.org/b")
    start = datetime.now(UTC) - timedelta(minutes=5)
    served_before = datetime.now(UTC) - timedelta(seconds=2)
    add_entry([click(link) for _ in range(5)] + [click(other) for _ in range(3)])
    assert ch_importer("ch-del").run(once=True) == 8
    on_every_replica(cluster, [link.pk], 5)
    on_every_replica(cluster, [other.pk], 3)

    def account() -> tuple[int, int]:
        hours = accounts(client=get_redis(), start=start, end=start + timedelta(hours=2))
        return sum(hour.stored_clicks for hour in hours), sum(hour.deleted_clicks for hour in hours)

    def reads(of: Link) -> dict:
        stats = link_stats(link_ids=[of.pk], start=start, end=start + timedelta(hours=2), include_bots=True, top=5)
        api = api_client(owner, scope="read")
        export = api.get("/api/v1/clicks", {"format": "csv", "link": of.slug})
        lines = b"".join(export.streaming_content).decode().splitlines()
        campaign = campaign_clicks(
            Link.objects.filter(pk=of.pk), start=start, end=start + timedelta(hours=2), include_bots=True
        )
        return {
            "report": stats.clicks,
            "hours": sum(point.clicks for point in stats.series),
            "browsers": sum(n for _, n in stats.breakdowns["browser"]),
            "visits": link_clicks(Link.objects.filter(pk=of.pk), VisitsRange()).count(),
            "export": len(lines) - 1,
            "campaign": sum(row.clicks for row in campaign),
            "all time": link_totals(link_ids=[of.pk])[of.pk].clicks,
        }

    assert reads(link) == dict.fromkeys(reads(link), 5)
    stored_then, deleted_then = account()

    answer = shlink_client(owner).delete(f"/rest/v3/short-urls/{link.slug}/visits")
    assert answer.status_code == 200 and answer.json() == {"deletedVisits": 5}
    assert stored(cluster, [link]) == 5  # the rows stay
    assert reads(link) == dict.fromkeys(reads(link), 0)
    assert reads(other) == dict.fromkeys(reads(other), 3)
    assert account() == (stored_then - 5, deleted_then + 5)

    # Served before the deletion, stored after it; and one served after it.
    add_entry([click(link, **_at(served_before)), click(link), click(link)])
    assert ch_importer("ch-del").run(once=True) == 3
    on_every_replica(cluster, [link.pk], 8)
    assert reads(link) == dict.fromkeys(reads(link), 2)
    assert account() == (stored_then - 5 + 2, deleted_then + 6)

    # The dashboard's door deletes what came since, and says how many.
    web = Client()
    web.force_login(owner)
    page = web.post(f"/links/{link.slug}/visits/delete/", follow=True)
    assert page.status_code == 200 and "Deleted 2 visits" in page.content.decode()
    assert reads(link) == dict.fromkeys(reads(link), 0)
    assert account() == (stored_then - 5, deleted_then + 8)


def test_deleted_orphan_visits_are_left_out_and_counted_deleted(cluster):
    """Shlink's DELETE /visits/orphan, by staff: every orphan visit stored
    so far is left out of the counts and of the visits after a link's end,
    and counted as deleted; one stored after counts."""
    staff = make_user(is_superuser=True)
    lost = "gone" + uuid.uuid4().hex[:8]
    start = datetime.now(UTC) - timedelta(minutes=5)
    add_entry([orphan(lost), orphan(lost), {**orphan(lost), "kind": "expired"}])
    assert ch_importer("ch-del-orphans").run(once=True) == 3
    # Each orphan visit on both replicas of its shard: a read of the
    # distributed table may take either.
    local = "SELECT count() FROM orphan_visits_local WHERE slug = %(slug)s"

    def held() -> int:
        return sum(node.client().execute(local, {"slug": lost})[0][0] for node in cluster.nodes)

    assert until(held, 2 * 3) == 2 * 3

    def orphans_here() -> int:
        return orphan_visit_counts(span=VisitsRange(start=start, end=datetime.now(UTC))).total

    def account() -> tuple[int, int]:
        hours = accounts(client=get_redis(), start=start, end=start + timedelta(hours=2))
        return sum(hour.stored_orphans for hour in hours), sum(hour.deleted_orphans for hour in hours)

    assert orphans_here() >= 3 and visits_after_the_end(host="", slug=lost) == 1
    stored_then, deleted_then = account()
    assert stored_then >= 3
    answer = shlink_client(staff).delete("/rest/v3/visits/orphan")
    assert answer.status_code == 200 and answer.json()["deletedVisits"] >= 3
    assert orphans_here() == 0 and visits_after_the_end(host="", slug=lost) == 0
    assert account() == (0, deleted_then + stored_then)
    time.sleep(0.01)
    add_entry([orphan(lost)])
    assert ch_importer("ch-del-orphans").run(once=True) == 1
    assert until(held, 2 * 4) == 2 * 4
    assert orphans_here() == 1
    assert account() == (1, deleted_then + stored_then)

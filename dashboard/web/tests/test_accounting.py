"""Every click accounted for: traffic at a real edge, imported, and the
accounting page's served and stored figures for the hour; then clicks
removed behind the importer's back, and the difference shown; and visits
deleted through every door that deletes them, which show as deleted, not
as a difference, however a deletion and the importer meet."""

import os
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from clicks import accounting
from clicks.models import Click
from devstack import REPO
from links.domains import domain_create
from links.validation import default_host
from loadtest.scenarios.visitors import Visitors
from slingshot.contract import SERVED_KEY_PREFIX
from slingshot.redis import get_redis
from testing.accounting import even_at, forget_the_accounting, since, totals
from testing.factories import api_client, fresh, make_link
from testing.fixtures import database_url
from tokens.services import token_create

from .conftest import FIREFOX

pytestmark = pytest.mark.django_db(transaction=True)


def import_all() -> None:
    call_command("import_clicks", "--once", "--consumer", "accounting-test")


def current(now: datetime | None = None) -> accounting.HourAccount:
    now = now or datetime.now(timezone.utc)
    return accounting.accounts(client=get_redis(), start=now, end=now, now=now)[0]


def wait_until(condition, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, "timed out"
        import_all()
    return found


def clean_slate(make_edge):
    """The accounting forgotten, and an edge of the test's own."""
    edge = make_edge(workers=1)
    forget_the_accounting("accounting-test")
    return edge


def test_served_and_stored_agree_and_a_removal_shows(client, make_user, make_edge, settings):
    staff = make_user(is_staff=True)
    client.force_login(staff)
    edge = clean_slate(make_edge)

    link = make_link(owner=staff, url="https://example.com/acc", slug=fresh("ac"))
    for _ in range(5):
        assert edge.request(f"/{link.slug}", headers={"User-Agent": FIREFOX}).status == 302
    assert edge.request(f"/{link.slug}", method="HEAD").status == 302  # no click, so not counted either
    for _ in range(2):
        assert edge.request(f"/{fresh('no')}", headers={"User-Agent": FIREFOX}).status == 404

    def caught_up():
        hour = current()
        return hour if (hour.served, hour.stored) == (7, 7) else None

    hour = wait_until(caught_up)
    assert (hour.served_redirects, hour.served_orphans, hour.stored_clicks, hour.stored_orphans) == (5, 2, 5, 2)
    page = client.get(reverse("web:accounting"))
    row = page.context["hours"][0]
    assert (row.served, row.stored, row.difference) == (7, 7, 0)
    assert b'id="accounting-ok"' in page.content and b"Every click is accounted for" in page.content
    overview = client.get(reverse("web:overview")).content.decode()
    assert "Up to date: every click the edges sent is stored." in overview
    assert " pending" not in overview
    api = client.get("/api/v1/accounting")
    assert api.status_code == 200
    assert {k: api.json()["hours"][0][k] for k in ("served_redirects", "stored_clicks", "difference")} == {
        "served_redirects": 5,
        "stored_clicks": 5,
        "difference": 0,
    }

    # Two clicks removed behind the importer's back: the difference stays, and
    # once past the grace period the overview flags it.
    with connection.cursor() as cursor:
        cursor.execute("UPDATE click_rollup_hour SET clicks = clicks - 2, human_clicks = human_clicks - 2")
    page = client.get(reverse("web:accounting"))
    assert page.context["hours"][0].difference == 2
    assert b"2 (importing)" in page.content  # within the grace period: not flagged yet
    assert b'id="accounting-flag"' not in client.get(reverse("web:overview")).content
    settings.ACCOUNTING_GRACE_MINUTES = -60  # the current hour counts as settled
    assert b'id="accounting-flag"' in client.get(reverse("web:accounting")).content
    overview = client.get(reverse("web:overview"))
    assert b'id="accounting-flag"' in overview.content and b"Clicks unaccounted for: 1 hour" in overview.content


def test_accounting_and_orphan_visits_are_for_staff(signed_in):
    for name in ("web:accounting", "web:orphan-visits"):
        response = signed_in.get(reverse(name))
        assert response.status_code == 403 and b'id="error-403"' in response.content
    for path in ("/api/v1/accounting", "/api/v1/orphan-visits"):
        assert signed_in.get(path).status_code == 403


def test_orphan_visits_by_path_and_referrer(client, make_user, edge):
    staff = make_user(is_staff=True)
    client.force_login(staff)
    missing = fresh("gone")
    for referer in ("https://news.example.org/a", "https://news.example.org/b", None):
        headers = {"User-Agent": FIREFOX} | ({"Referer": referer} if referer else {})
        assert edge.request(f"/{missing}", headers=headers).status == 404
    assert edge.request(f"/{missing}", headers={"User-Agent": "curl/8.0"}).status == 404

    def found():
        page = client.get(reverse("web:orphan-visits"))
        paths = {
            (domain, path, kind): (visits, bots) for domain, path, kind, visits, bots in page.context["found"].by_path
        }
        return page if paths.get(("", missing, "unknown")) == (4, 1) else None

    page = wait_until(found)
    referrers = {host: visits for host, visits, _ in page.context["found"].by_referrer}
    assert referrers["news.example.org"] == 2 and referrers[""] >= 2
    assert f"/{missing}".encode() in page.content and b"default domain" in page.content
    humans = client.get(reverse("web:orphan-visits"), {"humans_only": "on", "days": "1"}).context["found"]
    assert {p: v for _, p, _, v, _ in humans.by_path}[missing] == 3
    api = client.get("/api/v1/orphan-visits", {"days": "1"}).json()
    assert {(row["domain"], row["path"], row["kind"]): row["visits"] for row in api["by_path"]}[
        ("", missing, "unknown")
    ] == 4


def test_orphan_visits_show_their_domain_and_kind_and_filter_by_domain(client, make_user, edge):
    """Visits on a second domain to a path it has no link of, and to a
    disabled, a scheduled, an expired and a used-up link: orphan visits,
    none a click."""
    staff = make_user(is_staff=True)
    client.force_login(staff)
    domain = domain_create(host=fresh("orph") + ".example.com")
    now = datetime.now(timezone.utc)
    slugs = {kind: fresh(kind[:4]) for kind in ("disabled", "scheduled", "expired", "limit")}
    url = "https://example.com/"
    made = [
        make_link(owner=staff, url=url, slug=slugs["disabled"], is_active=False),
        make_link(owner=staff, url=url, slug=slugs["scheduled"], valid_since=now + timedelta(days=1)),
        make_link(owner=staff, url=url, slug=slugs["expired"], expires_at=now + timedelta(seconds=1)),
    ]
    used_up = make_link(owner=staff, url=url, slug=slugs["limit"], max_visits=1)
    missing = fresh("nowhere")
    time.sleep(1)
    wanted = {(domain.host, missing, "unknown")} | {("", slug, kind) for kind, slug in slugs.items()}

    def found():
        # Asked again until the edge has the domain and the links.
        assert edge.request(f"/{missing}", headers={"Host": domain.host}).status == 404
        for kind, slug in slugs.items():
            assert edge.request(f"/{slug}").status in ((302, 410) if kind == "limit" else (404, 410))
        api = client.get("/api/v1/orphan-visits", {"days": "1"}).json()
        return wanted <= {(row["domain"], row["path"], row["kind"]) for row in api["by_path"]}

    wait_until(found)
    assert Click.objects.filter(link_id__in=[link.pk for link in made]).count() == 0
    assert Click.objects.filter(link_id=used_up.pk).count() == 1  # its one visit; the rest are orphans
    only = client.get("/api/v1/orphan-visits", {"days": "1", "domain": domain.host.upper()}).json()
    assert {(row["domain"], row["path"]) for row in only["by_path"]} == {(domain.host, missing)}
    default = client.get("/api/v1/orphan-visits", {"days": "1", "domain": default_host()}).json()
    assert {row["domain"] for row in default["by_path"]} == {""}
    assert {row["path"] for row in default["by_path"]} >= set(slugs.values())
    assert client.get("/api/v1/orphan-visits", {"domain": "not a host"}).status_code == 400
    assert client.get("/api/v1/orphan-visits", {"domain": ""}).status_code == 400
    page = client.get(reverse("web:orphan-visits"), {"domain": domain.host})
    assert domain.host.encode() in page.content and f"/{missing}".encode() in page.content
    assert f"/{slugs['disabled']}".encode() not in page.content
    refused = client.get(reverse("web:orphan-visits"), {"domain": "not a host"})
    assert refused.status_code == 200 and refused.context["form"].errors["domain"]
    everywhere = client.get(reverse("web:orphan-visits")).content.decode()
    assert 'data-kind="disabled">disabled</td>' in everywhere and 'data-kind="expired">expired</td>' in everywhere
    assert 'data-kind="limit">past its visit limit</td>' in everywhere
    # One kind alone, on the page and in the API; a kind that is none is refused.
    limited = client.get(reverse("web:orphan-visits"), {"kind": "limit"}).context["found"]
    assert {(path, kind) for _, path, kind, _, _ in limited.by_path} == {(slugs["limit"], "limit")}
    api = client.get("/api/v1/orphan-visits", {"days": "1", "kind": "limit"}).json()
    assert {(row["path"], row["kind"]) for row in api["by_path"]} == {(slugs["limit"], "limit")}
    assert client.get("/api/v1/orphan-visits", {"kind": "lost"}).status_code == 400


def test_an_hour_no_edge_counted_in_is_not_counted_rather_than_a_difference(client, make_user, settings):
    """Clicks stored in hours before the edges counted (a database from an
    older version, or counts past their 8 days): no difference, no flag.
    The first hour counted, begun before the edges counted, is not flagged
    for what was stored before; a loss after that is."""
    staff = make_user(is_staff=True)
    client.force_login(staff)
    settings.ACCOUNTING_GRACE_MINUTES = 0
    redis = get_redis()
    now = datetime.now(timezone.utc).replace(minute=30)
    hours = [now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=n) for n in (6, 5, 4, 3)]
    keys = [SERVED_KEY_PREFIX + str(int(hour.timestamp())) for hour in hours]
    redis.delete(*keys)
    link = make_link(owner=staff, url="https://example.com/old", slug=fresh("old"))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM click_rollup_hour WHERE bucket >= %s", [hours[0]])
        for hour, clicks in zip(hours, (40, 30, 20, 10), strict=True):
            cursor.execute(
                "INSERT INTO click_rollup_hour (link_id, bucket, clicks, human_clicks, visitors, human_visitors)"
                " VALUES (%s, %s, %s, %s, 1, 1)",
                [link.pk, hour, clicks, clicks],
            )
    # No count for the first two hours; the edges began within the third
    # (12 of its 20 counted); the fourth lost 2 of 12.
    redis.hset(keys[2], mapping={"0123456789abcdef:redirect": 12, "0123456789abcdef:orphan": 0})
    redis.hset(keys[3], mapping={"0123456789abcdef:redirect": 9, "fedcba9876543210:redirect": 3, "redirect": 0})
    try:
        found = {hour.hour: hour for hour in accounting.accounts(client=redis, start=hours[0], end=now, now=now)}
        old, older = found[hours[1]], found[hours[0]]
        assert (old.counted, old.difference, old.lasting, old.stored) == (False, None, False, 30)
        assert (older.counted, older.difference, older.lasting) == (False, None, False)
        first = found[hours[2]]
        assert (first.counted, first.whole, first.difference, first.partly_counted, first.lasting) == (
            True,
            False,
            -8,
            True,
            False,
        )
        lost = found[hours[3]]
        assert (lost.served_redirects, lost.difference, lost.partly_counted, lost.lasting) == (12, 2, False, True)

        page = client.get(reverse("web:accounting"))
        rows = {row.hour: row for row in page.context["hours"]}
        assert [row.hour for row in page.context["lasting"]] == [hours[3]]
        content = page.content.decode()
        assert "not counted" in content and "(counted from part of the hour)" in content
        assert b"1 hour with a difference that stays" in page.content
        assert rows[hours[1]].difference is None
        api = {row["hour"]: row for row in client.get("/api/v1/accounting").json()["hours"]}
        row = api[hours[1].isoformat().replace("+00:00", "Z")]
        assert (row["counted"], row["difference"], row["lasting"]) == (False, None, False)
        row = api[hours[2].isoformat().replace("+00:00", "Z")]
        assert (row["partly_counted"], row["difference"], row["lasting"]) == (True, -8, False)
        assert client.get("/api/v1/accounting").json()["lasting"] == 1
    finally:
        redis.delete(*keys)
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM click_rollup_hour WHERE link_id = %s", [link.pk])


# --- deletions -----------------------------------------------------------------------


def shlink_client(user) -> APIClient:
    _, key = token_create(user=user, name="accounting", scope="write")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=key)
    return client


def deleted_by_kind() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT kind, sum(visits) FROM click_deletions_hour GROUP BY kind")
        return dict(cursor.fetchall())


def test_visits_deleted_through_every_door_show_as_deleted_and_nothing_as_missing(
    client, make_user, make_edge, settings
):
    """Visits served by a real edge and stored by the importer, then deleted
    through each door: Shlink's DELETE of a short URL's visits, of a short
    URL and of the orphan visits; /api/v1's DELETE of a link; the dashboard's
    delete and bulk delete; and a link deleted before the importer had its
    clicks. Every hour still accounts for every click the edge served."""
    staff = make_user(is_staff=True)
    client.force_login(staff)
    settings.ACCOUNTING_GRACE_MINUTES = -60  # every hour settled: a difference would be flagged at once
    edge = clean_slate(make_edge)
    start = datetime.now(timezone.utc)
    visits = {"shlink-visits": 4, "shlink-link": 3, "api": 2, "page": 2, "bulk": 2, "kept": 1, "unimported": 2}
    links = {door: make_link(owner=staff, url=f"https://example.com/{door}", slug=fresh("del")) for door in visits}

    def visit(slug: str, times: int, status: int = 302) -> None:
        for _ in range(times):
            assert edge.request(f"/{slug}", headers={"User-Agent": FIREFOX}).status == status

    for door, times in visits.items():
        if door != "unimported":
            visit(links[door].slug, times)
    visit(fresh("none"), 2, status=404)
    wait_until(lambda: even_at(start, served_redirects=14, stored_clicks=14, served_orphans=2, stored_orphans=2))
    # Served, and the link deleted before the importer stores its clicks: it drops them.
    visit(links["unimported"].slug, visits["unimported"])
    api = api_client(staff)
    assert api.delete(f"/api/v1/links/{links['unimported'].slug}").status_code == 204

    shlink = shlink_client(staff)
    assert shlink.delete(f"/rest/v3/short-urls/{links['shlink-visits'].slug}/visits").json() == {"deletedVisits": 4}
    assert shlink.delete(f"/rest/v3/short-urls/{links['shlink-link'].slug}").status_code == 204
    assert api.delete(f"/api/v1/links/{links['api'].slug}").status_code == 204
    assert client.post(reverse("web:link-delete", args=[links["page"].slug])).status_code == 302
    bulk = {"action": "delete", "confirm": "true", "selected": [str(links["bulk"].pk)]}
    assert client.post(reverse("web:link-bulk"), bulk).status_code == 302
    assert shlink.delete("/rest/v3/visits/orphan").json() == {"deletedVisits": 2}

    expected = {"served_redirects": 16, "stored_clicks": 1, "deleted_clicks": 15}
    expected |= {"served_orphans": 2, "stored_orphans": 0, "deleted_orphans": 2}
    hours = wait_until(lambda: even_at(start, **expected))
    assert totals(hours) == expected
    assert deleted_by_kind() == {"click": 13, "dropped": 2, "orphan": 2}

    page = client.get(reverse("web:accounting"))
    assert page.context["lasting"] == [] and b'id="accounting-ok"' in page.content
    content = page.content.decode()
    for hour in hours:
        if hour.deleted:
            assert f"{hour.deleted} deleted" in content
    assert b'id="accounting-flag"' not in client.get(reverse("web:overview")).content
    rows = client.get("/api/v1/accounting").json()["hours"]  # the last day, clean before this test
    assert sum(row["deleted_clicks"] for row in rows) == 15 and sum(row["deleted_orphans"] for row in rows) == 2
    assert {row["difference"] for row in rows if row["counted"]} == {0}


def test_visits_deleted_while_the_importer_stores_more_of_the_same_link_leave_no_difference(
    make_user, make_edge, tmp_path
):
    """Visitors keep clicking two links through a real edge while a
    following importer stores their clicks; meanwhile one link's visits are
    deleted again and again through Shlink's API, and the other link is
    deleted (the clicks still on their way to PostgreSQL go with it, and its
    visits from then on are orphan visits). Once the importer has caught
    up, every redirect served is stored or deleted."""
    staff = make_user(is_staff=True)
    edge = clean_slate(make_edge)
    start = datetime.now(timezone.utc)
    emptied = make_link(owner=staff, url="https://example.com/emptied", slug=fresh("emp"))
    removed = make_link(owner=staff, url="https://example.com/removed", slug=fresh("rem"))
    importer = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "dashboard" / "manage.py"),
            "import_clicks",
            "--consumer",
            f"acc-{uuid.uuid4().hex}",
        ],
        env={**os.environ, "DATABASE_URL": database_url()},
        stdout=open(tmp_path / "importer.log", "wb"),
        stderr=subprocess.STDOUT,
    )
    shlink = shlink_client(staff)
    visitors = [
        Visitors(edge.port, emptied.slug, threads=2, rate=200).start(),
        Visitors(edge.port, removed.slug, threads=1, rate=100).start(),
    ]
    try:
        deadline = time.monotonic() + 30
        while not Click.objects.filter(link_id=emptied.pk).exists():  # the importer has started
            assert time.monotonic() < deadline, "no click stored"
            time.sleep(0.1)
        deleted = []
        for round in range(5):
            time.sleep(0.4)
            deleted.append(shlink.delete(f"/rest/v3/short-urls/{emptied.slug}/visits").json()["deletedVisits"])
            if round == 2:
                assert api_client(staff).delete(f"/api/v1/links/{removed.slug}").status_code == 204
        time.sleep(0.4)
    finally:
        for crowd in visitors:
            crowd.stop()
    try:
        served = sum(crowd.served[crowd.slug] for crowd in visitors)
        deadline = time.monotonic() + 30
        while not (hours := even_at(start, served_redirects=served)):
            assert time.monotonic() < deadline, (served, totals(since(start)))
            time.sleep(0.2)
    finally:
        importer.terminate()
        importer.wait(timeout=30)
    found = totals(hours)
    assert found["stored_clicks"] + found["deleted_clicks"] == served
    # The deletions met the importer: each found clicks it had stored since the last.
    assert sum(deleted) > 0 and found["stored_clicks"] > 0 and found["served_orphans"] > 0
    # Every visit answered: a redirect, or once its link was gone a 404.
    outcomes = (visitors[0].failures, {failure for _, failure in visitors[1].failures})
    assert outcomes == ([], {"HTTP 404"}), edge.errors()[-3000:]

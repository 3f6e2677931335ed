"""The Shlink source against Slingshot's own Shlink API (api/shlink/),
served by gunicorn on the test database: one Slingshot importing from
another, a real Shlink REST API v3 over HTTP."""

import os
from datetime import datetime, timedelta, timezone

import pytest
from django.conf import settings
from django.db import connection

from api.tests.shlink import BOT, BROWSER, store_visits
from importers.models import ImportJob
from links.domains import domain_create
from links.models import Link
from slingshot.contract import VISITS_KEY_PREFIX
from slingshot.redis import get_redis
from testing.factories import fresh, make_link, make_user
from tokens.services import token_create

from .helpers import import_links, secret_file

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime.now(timezone.utc).replace(microsecond=0)
RULES = [
    {"url": "https://apps.apple.com/app/id1", "conditions": [{"type": "device", "value": "ios"}]},
    {"url": "https://example.de/", "conditions": [{"type": "language", "value": "de"}]},
    {"url": "https://example.com/promo", "conditions": [{"type": "query", "key": "utm", "value": "mail"}]},
    {
        "url": "https://example.com/office",
        "conditions": [
            {"type": "ip", "value": "192.168.1.*"},
            {"type": "browser", "value": "firefox"},
            {"type": "after", "value": "2030-01-01T00:00:00Z"},
            {"type": "before", "value": "2030-02-01T00:00:00Z"},
            {"type": "device", "value": "chromeos"},
        ],
    },
]
CARRIED = ("url", "title", "tags", "valid_since", "expires_at", "max_visits", "crawlable", "forward_query", "rules")


@pytest.fixture
def shlink(servers):
    """The address of a Slingshot serving Shlink's API on the test database."""
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "EDGE_BASE_URL": settings.EDGE_BASE_URL,
    }
    port = servers.start_dashboard(env, workers=1)
    dashboard = servers.processes[-1]
    yield f"http://127.0.0.1:{port}"
    dashboard.terminate()
    dashboard.wait(timeout=30)


def visits_of(link: Link) -> list[tuple]:
    """Its clicks as Shlink's API can tell them: to the second."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT date_trunc('second', c.occurred_at), c.referer, a.user_agent, c.country, c.is_bot"
            " FROM clicks c JOIN user_agents a ON a.id = c.user_agent_id WHERE c.link_id = %s ORDER BY 1, 5",
            [link.pk],
        )
        return cursor.fetchall()


def run(url: str, key: str, tmp_path, **options) -> str:
    return import_links("shlink", url=url, api_key_file=secret_file(tmp_path, key), **options)


def test_one_slingshot_imports_another_through_shlinks_api(shlink, team, user, other_domain, tmp_path):
    source = make_user(is_staff=True)  # staff: Shlink's API shows them the orphan visits
    _, key = token_create(user=source, name="export", scope="read")
    full = make_link(
        owner=source,
        url="https://example.com/full?x=1",
        slug=fresh("full-"),
        title="Spring sale",
        tags=["newsletter", "sale"],
        valid_since=NOW - timedelta(days=3),
        expires_at=NOW + timedelta(days=30),
        max_visits=1000,
        crawlable=True,
        forward_query=False,
        rules=RULES,
    )
    plain = make_link(owner=source, url="https://example.com/plain", slug=fresh("plain-"))
    elsewhere = domain_create(host=f"{fresh('src')}.example")
    clashing = make_link(owner=source, url="https://example.com/there", slug=fresh("there-"), domain=elsewhere)
    lost = fresh("lost-")
    with connection.cursor() as cursor:  # the source's orphan visits are this test's alone
        cursor.execute("DELETE FROM orphan_visits")
    store_visits((full, BROWSER), (full, BOT), (plain, BROWSER), minutes_ago=90)
    store_visits((lost, BROWSER), minutes_ago=80, kind="unknown")

    out = run(shlink, key, tmp_path, user=user.username, team=str(team.pk), domain=other_domain.host)

    assert "links: 3 read, 2 created" in out and "1 clashes" in out, out
    assert "visits: 3 read, 3 stored" in out and "orphan visits: 1 read, 1 stored" in out
    assert f"clash: {elsewhere.host}/{clashing.slug}" in out
    for original in (full, plain):
        copy = Link.objects.get(domain=other_domain, slug=original.slug)
        assert copy.team_id == team.pk
        assert {name: getattr(copy, name) for name in CARRIED} == {name: getattr(original, name) for name in CARRIED}
        assert copy.created_at == original.created_at.replace(microsecond=0)
        assert visits_of(copy) == visits_of(original) and visits_of(copy)
    copy = Link.objects.get(domain=other_domain, slug=full.slug)
    assert [row[4] for row in visits_of(copy)] == [False, True]
    assert int(get_redis().get(VISITS_KEY_PREFIX + str(copy.pk))) == 2
    job = ImportJob.objects.get(team=team)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM orphan_visits WHERE slug = %s AND import_id = %s", [lost, job.pk])
        assert cursor.fetchone()[0] == 1
    clashing.refresh_from_db()
    assert clashing.url == "https://example.com/there" and clashing.team_id != team.pk

    again = run(shlink, key, tmp_path, user=user.username, team=str(team.pk), domain=other_domain.host)

    assert "0 created, 2 imported before" in again and "3 read, 0 stored, 3 stored before" in again, again
    # One database: the orphan visit the first run stored (on the chosen
    # domain) is one of the source's too, and read as a new one.
    assert "orphan visits: 2 read, 1 stored" in again
    assert len(visits_of(copy)) == 2

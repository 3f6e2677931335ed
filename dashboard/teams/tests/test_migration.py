"""Links made before teams move into their owner's personal team, with
every click: run with the migration executor on the real database, from the
schema before teams to the schema of today."""

import uuid
from datetime import datetime, timedelta, timezone

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from clicks.enrichment import hash64

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_TEAMS = [("links", "0001_initial"), ("api", "0001_initial"), ("teams", None)]
COUNTS = "SELECT link_id, count(*) FROM clicks WHERE link_id = ANY(%s) GROUP BY link_id ORDER BY link_id"
WHEN = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=2)


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def test_existing_links_move_into_personal_teams_with_every_click():
    migrate(BEFORE_TEAMS)
    try:
        with connection.cursor() as cursor:
            people = {}
            for name in ("ana-" + uuid.uuid4().hex[:6], "bo-" + uuid.uuid4().hex[:6]):
                cursor.execute(
                    "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email,"
                    " is_staff, is_active, date_joined) VALUES ('!', false, %s, '', '', '', false, true, now())"
                    " RETURNING id",
                    [name],
                )
                people[name] = cursor.fetchone()[0]
            cursor.execute(
                "INSERT INTO links_domain (host, root_url, not_found_url, https_redirect, created_at)"
                " VALUES ('migration.test', '', '', false, now()) ON CONFLICT (host) DO NOTHING"
            )
            links = {}
            for name, user_id in people.items():
                cursor.execute(
                    "INSERT INTO links_link (domain_id, slug, url, owner_id, title, description, tags,"
                    " redirect_status, forward_query, crawlable, password, rules, split, is_active, created_at,"
                    " updated_at) VALUES ((SELECT id FROM links_domain WHERE host = 'migration.test'), %s, 'https://example.com/', %s, '',"
                    " '', '{}', 302, false, false, '', '[]', '[]', true, now(), now()) RETURNING id",
                    ["m" + uuid.uuid4().hex[:10], user_id],
                )
                links[name] = cursor.fetchone()[0]
                cursor.execute(
                    "INSERT INTO api_apitoken (user_id, name, prefix, digest, scope, created_at)"
                    " VALUES (%s, 'old', 'ssk_x', %s, 'read', now())",
                    [user_id, uuid.uuid4().hex],
                )
            cursor.execute("SELECT slingshot_ensure_click_partitions(%s, 1)", [WHEN - timedelta(days=1)])
            agent = hash64("migration-test", b"agent")
            cursor.execute("INSERT INTO user_agents VALUES (%s, 'migration-test') ON CONFLICT DO NOTHING", [agent])
            for index, link_id in enumerate(links.values()):
                for minute in range(3 + index):
                    cursor.execute(
                        "INSERT INTO clicks (click_id, occurred_at, link_id, slug, ip, user_agent_id, is_bot,"
                        " country, browser, os, device, referer, referer_host) SELECT %s, %s, id, slug,"
                        " '203.0.113.0', %s, false, 'unknown', 'unknown', 'unknown', 'unknown', '', ''"
                        " FROM links_link WHERE id = %s",
                        [uuid.uuid4(), WHEN + timedelta(minutes=minute), agent, link_id],
                    )
            cursor.execute(COUNTS, [list(links.values())])
            clicks_before = cursor.fetchall()
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    from api.models import ApiToken
    from links.models import Link
    from teams.models import Membership, Team

    for name, user_id in people.items():
        team = Team.objects.get(personal_for_id=user_id)
        assert team.name == name
        assert (
            Membership.objects.get(team=team).user_id == user_id and Membership.objects.get(team=team).role == "admin"
        )
        link = Link.objects.get(pk=links[name])
        assert (link.team_id, link.owner_id) == (team.pk, user_id)
        assert ApiToken.objects.get(user_id=user_id).team_id == team.pk
    with connection.cursor() as cursor:
        cursor.execute(COUNTS, [list(links.values())])
        assert cursor.fetchall() == clicks_before
    assert sorted(count for _, count in clicks_before) == [3, 4]

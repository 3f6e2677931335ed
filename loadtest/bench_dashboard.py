"""Dashboard benchmark: `make bench-dashboard`.

Starts its own PostgreSQL and Redis (devstack.throwaway) and the dashboard
under gunicorn, gives a team 100,000 links (each with a week of daily click
rollups, so every row of the page has a click total to add up), signs one of
its members in with that team current, while the member's personal team and
a team they are not in hold links of their own, and times the team's links
list page as a browser gets it: the first page, a deep page,
a tag filter, a search and the sort by clicks.

    .venv/bin/python loadtest/bench_dashboard.py [--links 100000] [--requests 50] [--smoke]
"""

import argparse
import http.client
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from devstack.throwaway import ThrowawayStack  # noqa: E402
from loadtest.bench_api import MANAGE, percentile  # noqa: E402

LINKS_SQL = """
INSERT INTO links_link (domain_id, slug, url, owner_id, team_id, title, description, tags, redirect_status,
                        expires_at, forward_query, crawlable, password, rules, split, is_active, created_at, updated_at)
SELECT %(domain)s, 'b' || i, 'https://example.com/landing/' || i, %(owner)s, %(team)s, 'Campaign link ' || i, '',
       ARRAY['tag' || (i %% 20), 'all'], 302, NULL, false, false, '', '[]', '[]', i %% 10 <> 0,
       now() - make_interval(secs => i * 60), now()
FROM generate_series(1, %(links)s) i;

-- Links of the member's personal team and of a team they are not in: the
-- list shows the current team's only.
INSERT INTO links_link (domain_id, slug, url, owner_id, team_id, title, description, tags, redirect_status,
                        forward_query, crawlable, password, rules, split, is_active, created_at, updated_at)
SELECT %(domain)s, 'o' || i, 'https://example.com/other/' || i, %(owner)s,
       CASE WHEN i %% 2 = 0 THEN %(personal)s ELSE %(other)s END,
       '', '', '{}', 302, false, false, '', '[]', '[]', true, now() - make_interval(secs => i * 60), now()
FROM generate_series(1, %(links)s / 10) i;

INSERT INTO click_rollup_day (link_id, bucket, clicks, human_clicks, visitors, human_visitors)
SELECT id, bucket, c, h, (c + 1) / 2, (h + 1) / 2
FROM (SELECT l.id, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - make_interval(days => d) AS bucket,
             1 + (l.id + d) %% 50 AS c, 1 + (l.id + d) %% 50 - (1 + (l.id + d) %% 50) / 10 AS h
      FROM links_link l CROSS JOIN generate_series(0, 6) d WHERE l.team_id = %(team)s) counts;

-- A tag only three of the team's links have.
UPDATE links_link SET tags = tags || ARRAY['Rare']::varchar[]
WHERE team_id = %(team)s AND slug IN ('b500', 'b50000', 'b99999');

-- The all-time totals the importer keeps beside the rollups (docs/rollups.md).
INSERT INTO link_click_totals (link_id, clicks, human_clicks)
SELECT link_id, sum(clicks), sum(human_clicks) FROM click_rollup_day GROUP BY link_id;

VACUUM ANALYZE links_link;
VACUUM ANALYZE click_rollup_day;
VACUUM ANALYZE link_click_totals;
"""

SESSION = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from links.domains import default_domain
from teams.models import Role
from teams.services import member_add, team_create
from web.teams import SESSION_KEY as TEAM_KEY
admin, user = get_user_model().objects.create_user("bench-admin"), get_user_model().objects.create_user("bench")
team = team_create(actor=admin, name="Campaigns")
member_add(actor=admin, team=team, username=user.username, role=Role.EDITOR)
other = team_create(actor=get_user_model().objects.create_user("bench-other"), name="Elsewhere")
session = SessionStore()
session.update({SESSION_KEY: str(user.pk), BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
                HASH_SESSION_KEY: user.get_session_auth_hash(), TEAM_KEY: team.pk})
session.save()
print(default_domain().pk, user.pk, team.pk, user.personal_team.pk, other.pk, session.session_key)
"""


def time_page(port: int, session: str, path: str, count: int) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Cookie": f"sessionid={session}"}

    def get() -> bytes:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, (path, response.status, body[:300])
        return body

    get()  # warm the connection, the worker and PostgreSQL's cache
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        body = get()
        timings.append(time.perf_counter() - started)
    conn.close()
    return {
        "p50": percentile(timings, 50) * 1000,
        "p99": percentile(timings, 99) * 1000,
        "rows": body.count(b"<tr>") - 1,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--smoke", action="store_true", help="1,000 links, 3 requests a page: that the script works")
    args = parser.parse_args()
    if args.smoke:
        args.links, args.requests = 1000, 3

    stack = ThrowawayStack(prefix="slingshot-bench-dashboard-")
    try:
        stack.start()
        env = {**os.environ, **stack.environment(), "EDGE_BASE_URL": "http://127.0.0.1:8080"}
        run = lambda *cmd: subprocess.run([*MANAGE, *cmd], env=env, check=True, capture_output=True, text=True)  # noqa: E731
        run("migrate", "--no-input")
        domain, owner, team, personal, other, session = run("shell", "-c", SESSION).stdout.split()[-6:]
        import psycopg

        started = time.monotonic()
        with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
            for statement in filter(str.strip, LINKS_SQL.split(";")):
                ids = {
                    "domain": int(domain),
                    "owner": int(owner),
                    "team": int(team),
                    "personal": int(personal),
                    "other": int(other),
                }
                conn.execute(statement, {**ids, "links": args.links})
        print(
            f"{args.links:,} links of one team with 7 days of rollups each, {args.links // 10:,} of two others, "
            f"written in {time.monotonic() - started:.0f} s"
        )

        port = stack.start_dashboard(env, workers=1)
        print(f"gunicorn, one sync worker, on {os.cpu_count()} cores; {args.requests} sequential requests each")
        for label, path in [
            ("first page, newest first", "/links/"),
            ("page 1,000 of 2,000", "/links/?page=1000"),
            ("tag filter (5,000 links)", "/links/?tag=tag7"),
            ("tag filter (3 links)", "/links/?tag=rare"),
            ("search in slug, title and target", "/links/?q=landing/4242"),
            ("disabled only", "/links/?status=disabled"),
            ("sorted by clicks", "/links/?sort=-clicks"),
        ]:
            timing = time_page(port, session, path, args.requests)
            print(
                f"links list, {label}: {timing['rows']} rows, p50 {timing['p50']:.1f} ms, "
                f"p99 {timing['p99']:.1f} ms (target < 300 ms)"
            )
        return 0
    finally:
        stack.cleanup()


if __name__ == "__main__":
    sys.exit(main())

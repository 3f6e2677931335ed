"""Memory of a clicks export: `make bench-export`.

Starts its own PostgreSQL and Redis (devstack.throwaway), writes one link
with --clicks raw clicks (default 1,000,000), then streams the export the
page and the API serve (clicks/export.py over a server-side cursor) as CSV
and as JSON lines into nothing, and prints the process's peak resident
memory after each tenth of the rows: flat when the export streams.

    .venv/bin/python loadtest/bench_export.py [--clicks 1000000] [--smoke]
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from devstack.throwaway import ThrowawayStack  # noqa: E402
from loadtest.bench_api import MANAGE  # noqa: E402

SEED = """
from django.contrib.auth import get_user_model
from links.fields import LinkFields
from links.services import link_create
user = get_user_model().objects.create_user("bench")
print(link_create(owner=user, fields=LinkFields(url="https://example.com/export", slug="export")).pk)
"""

CLICKS_SQL = """
SELECT slingshot_ensure_click_partitions(now() - interval '1 month', 2);
INSERT INTO user_agents VALUES (1, 'Mozilla/5.0 (X11 Linux x86_64) Firefox/120.0') ON CONFLICT DO NOTHING;
INSERT INTO clicks (click_id, occurred_at, link_id, slug, ip, user_agent_id, is_bot, country, browser, os, device,
                    referer, referer_host)
SELECT gen_random_uuid(), now() - (i || ' seconds')::interval / 100, %(link)s, 'export', '198.51.100.0', 1,
       i %% 10 = 0, 'DE', 'Firefox', 'Linux', 'desktop', 'https://news.example.org/=1+' || i, 'news.example.org'
FROM generate_series(1, %(clicks)s) AS i;
ANALYZE clicks;
"""

EXPORT = """
import resource, sys
from clicks.export import CHUNK, export_lines
from clicks.selectors import clicks_visible_to
from django.contrib.auth import get_user_model
user = get_user_model().objects.get(username="bench")
total = {clicks}
for kind in ("csv", "jsonl"):
    clicks = clicks_visible_to(user, slug="export").order_by("occurred_at").iterator(chunk_size=CHUNK)
    rows = size = 0
    for line in export_lines(clicks, kind):
        rows += 1
        size += len(line)
        if rows % (total // 10) == 0:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{{kind}}: {{rows:,}} lines, {{size / 2**20:.0f}} MiB written, peak RSS {{peak:.0f}} MiB", flush=True)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=1_000_000)
    parser.add_argument("--smoke", action="store_true", help="2,000 clicks: that the script works (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.clicks = 2000
    stack = ThrowawayStack(prefix="slingshot-bench-export-")
    try:
        stack.start()
        env = {**os.environ, **stack.environment(), "EDGE_BASE_URL": "http://127.0.0.1:8080"}
        run = lambda *cmd: subprocess.run([*MANAGE, *cmd], env=env, check=True, capture_output=True, text=True)  # noqa: E731
        run("migrate", "--no-input")
        link = int(run("shell", "-c", SEED).stdout.split()[-1])
        import psycopg

        started = time.monotonic()
        with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
            for statement in filter(str.strip, CLICKS_SQL.split(";")):
                conn.execute(statement, {"link": link, "clicks": args.clicks})
        print(f"{args.clicks:,} clicks written in {time.monotonic() - started:.0f} s")
        started = time.monotonic()
        export = subprocess.Popen([*MANAGE, "shell", "-c", EXPORT.format(clicks=args.clicks)], env=env, text=True)
        export.wait()
        print(f"both exports in {time.monotonic() - started:.0f} s")
        return export.returncode
    finally:
        stack.cleanup()


if __name__ == "__main__":
    sys.exit(main())

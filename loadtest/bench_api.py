"""API benchmark: `make bench-api`.

Starts its own durable PostgreSQL and Redis (devstack.throwaway) and the
dashboard under gunicorn, then measures, over HTTP with a bearer token:

1. link creation at a steady rate (default 200 requests/s for 30 s), latency
   counted from each request's scheduled start, so a stall that delays later
   requests is counted against them too (no coordinated omission);
2. the stats endpoint of one link whose rollups hold 10,000,000 clicks (a year
   of hourly rollups and breakdowns, written straight into the rollup tables
   in the importer's schema, docs/rollups.md), for every shape of range the
   API allows, against a 100 ms median;
3. the link page over the same link, with its presets and breakdowns,
   against a 150 ms median.

The publisher process runs beside gunicorn, as in production, so the figures
include delivering every new link to Redis.

    .venv/bin/python loadtest/bench_api.py [--rate 200] [--seconds 30] [--clicks 10000000]
"""

import argparse
import http.client
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from devstack.throwaway import ThrowawayStack  # noqa: E402

MANAGE = [sys.executable, str(REPO / "dashboard" / "manage.py")]


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


class Client:
    """One keep-alive connection per thread."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.local = threading.local()

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        except (http.client.HTTPException, OSError):
            self.local.conn = None
            raise


def steady_creates(client: Client, *, rate: float, seconds: float, threads: int) -> dict:
    total = int(rate * seconds)
    start = time.monotonic() + 0.5
    tasks: queue.Queue = queue.Queue()
    for i in range(total):
        tasks.put((start + i / rate, i))
    latencies, failures, lock = [], [], threading.Lock()

    def worker():
        while True:
            try:
                scheduled, i = tasks.get_nowait()
            except queue.Empty:
                return
            delay = scheduled - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            try:
                status, _ = client.request("POST", "/api/v1/links", {"url": f"https://example.com/bench/{i}"})
            except Exception as exc:  # noqa: BLE001
                status = repr(exc)
            elapsed = time.monotonic() - scheduled
            with lock:
                (latencies if status == 201 else failures).append(elapsed if status == 201 else status)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    achieved = len(latencies) / (time.monotonic() - start)
    return {
        "requests": total,
        "ok": len(latencies),
        "failures": failures[:5],
        "rate": achieved,
        "p50": percentile(latencies, 50) * 1000,
        "p99": percentile(latencies, 99) * 1000,
        "max": max(latencies) * 1000,
    }


ROLLUP_SQL = """
INSERT INTO click_rollup_hour (link_id, bucket, clicks, human_clicks, visitors, human_visitors)
SELECT %(link)s, h, c, c * 9 / 10, c / 2, c * 9 / 20
FROM (SELECT h, greatest(0, %(per_hour)s + (extract(epoch FROM h)::bigint / 3600) %% 3 - 1) AS c
      FROM generate_series(%(start)s::timestamptz, %(end)s::timestamptz - interval '1 hour', interval '1 hour') h) hours;

INSERT INTO click_breakdown_hour (link_id, bucket, dimension, value, clicks, human_clicks)
SELECT r.link_id, r.bucket, d.dimension, d.dimension || '-' || v,
       CASE WHEN v = 1 THEN r.clicks - 9 * (r.clicks / 10) ELSE r.clicks / 10 END,
       CASE WHEN v = 1 THEN r.human_clicks - 9 * (r.human_clicks / 10) ELSE r.human_clicks / 10 END
FROM click_rollup_hour r
CROSS JOIN (VALUES ('referer_host'), ('browser'), ('os'), ('device'), ('country')) AS d(dimension)
CROSS JOIN generate_series(1, 10) v
WHERE r.link_id = %(link)s;

INSERT INTO click_rollup_day (link_id, bucket, clicks, human_clicks, visitors, human_visitors)
SELECT link_id, date_trunc('day', bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
       sum(clicks), sum(human_clicks), sum(visitors), sum(human_visitors)
FROM click_rollup_hour WHERE link_id = %(link)s GROUP BY 1, 2;

INSERT INTO click_breakdown_day (link_id, bucket, dimension, value, clicks, human_clicks)
SELECT link_id, date_trunc('day', bucket AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', dimension, value,
       sum(clicks), sum(human_clicks)
FROM click_breakdown_hour WHERE link_id = %(link)s GROUP BY 1, 2, 3, 4;

INSERT INTO link_click_totals (link_id, clicks, human_clicks)
SELECT link_id, sum(clicks), sum(human_clicks) FROM click_rollup_day WHERE link_id = %(link)s GROUP BY 1;

-- The day rows above hold these hours: mark them folded (docs/rollups.md).
UPDATE click_day_fold
SET folded_before = greatest(folded_before, (SELECT max(bucket) + interval '1 hour' FROM click_rollup_hour));

ANALYZE click_rollup_hour, click_rollup_day, click_breakdown_hour, click_breakdown_day;
"""


def load_rollups(database_url: str, *, link_id: int, clicks: int) -> None:
    import psycopg

    hours = 365 * 24
    with psycopg.connect(database_url) as conn:
        end = conn.execute("SELECT date_trunc('hour', now()) + interval '1 hour'").fetchone()[0]
        params = {
            "link": link_id,
            "per_hour": round(clicks / hours),
            "start": end.replace(year=end.year - 1),
            "end": end,
        }
        for statement in filter(str.strip, ROLLUP_SQL.split(";")):
            conn.execute(statement, params)


BENCH_SESSION = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
user = get_user_model().objects.get(username="bench")
session = SessionStore()
session.update({SESSION_KEY: str(user.pk), BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
                HASH_SESSION_KEY: user.get_session_auth_hash(), "time_zone": "UTC"})
session.save()
print(session.session_key)
"""


def time_page(port: int, session: str, path: str, count: int) -> dict:
    """A dashboard page as a signed-in browser gets it, sequentially."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get() -> None:
        conn.request("GET", path, headers={"Cookie": f"sessionid={session}"})
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, (path, response.status, body[:300])

    get()  # warm the connection, the worker and PostgreSQL's cache
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        get()
        timings.append(time.perf_counter() - started)
    conn.close()
    return {"p50": percentile(timings, 50) * 1000, "p99": percentile(timings, 99) * 1000}


def time_requests(client: Client, path: str, count: int) -> dict:
    client.request("GET", path)  # warm the connection and PostgreSQL's cache
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        status, body = client.request("GET", path)
        timings.append(time.perf_counter() - started)
        assert status == 200, (status, body[:300])
    return {
        "p50": percentile(timings, 50) * 1000,
        "p99": percentile(timings, 99) * 1000,
        "points": len(json.loads(body)["series"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--clicks", type=int, default=10_000_000)
    parser.add_argument("--stats-requests", type=int, default=50)
    args = parser.parse_args()

    stack = ThrowawayStack(prefix="slingshot-bench-api-", durable=True)
    try:
        stack.start()
        env = {
            **os.environ,
            **stack.environment(),
            "API_THROTTLE_RATE": "100000000/min",
            "EDGE_BASE_URL": "http://127.0.0.1:8080",
        }
        run = lambda *cmd: subprocess.run([*MANAGE, *cmd], env=env, check=True, capture_output=True, text=True)  # noqa: E731
        run("migrate", "--no-input")
        run(
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; get_user_model().objects.create_user('bench')",
        )
        token = run("create_api_token", "bench", "--scope", "write").stdout.strip()
        port = stack.start_dashboard(env, workers=args.workers)
        publisher = subprocess.Popen(
            [*MANAGE, "run_publisher"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(stack.root / "publisher.log", "ab"),
        )
        stack.processes.append(publisher)
        client = Client(port, token)

        print(f"gunicorn with {args.workers} sync workers, PostgreSQL and Redis durable, on {os.cpu_count()} cores")
        # Warm every worker up (imports, connections) at the same rate, unrecorded: the figures are steady state.
        steady_creates(client, rate=args.rate, seconds=5, threads=args.threads)
        created = steady_creates(client, rate=args.rate, seconds=args.seconds, threads=args.threads)
        print(
            f"link create at {args.rate:.0f}/s for {args.seconds:.0f} s: {created['ok']}/{created['requests']} "
            f"created ({created['rate']:.0f}/s achieved), p50 {created['p50']:.1f} ms, p99 {created['p99']:.1f} ms, "
            f"max {created['max']:.1f} ms (target p99 < 50 ms)"
            + (f"; failures e.g. {created['failures']}" if created["failures"] else "")
        )

        status, body = client.request(
            "POST", "/api/v1/links", {"url": "https://example.com/popular", "slug": "popular"}
        )
        assert status == 201, body
        database_url = env["DATABASE_URL"]
        import psycopg

        with psycopg.connect(database_url) as conn:
            link_id = conn.execute("SELECT id FROM links_link WHERE slug = 'popular'").fetchone()[0]
        started = time.monotonic()
        load_rollups(database_url, link_id=link_id, clicks=args.clicks)
        total = json.loads(client.request("GET", "/api/v1/links/popular")[1])["clicks"]
        print(f"rollups for {total:,} clicks over a year written in {time.monotonic() - started:.0f} s")
        year = time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime(time.time() - 366 * 86400))
        hours_80d = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() - 80 * 86400))
        # Every shape of range the API allows (at most 2,000 points: 80 days is the longest by hour).
        for label, query in [
            ("last 30 days by day (default)", ""),
            ("last 48 hours by hour", "?interval=hour"),
            ("last 80 days by hour", f"?interval=hour&from={hours_80d}"),
            ("a whole year by day", f"?interval=day&from={year}"),
            ("a whole year by week", f"?interval=week&from={year}"),
            ("a whole year by month", f"?interval=month&from={year}"),
            ("a whole year by day, bots included", f"?interval=day&include_bots=true&from={year}"),
            ("a whole year by day in Asia/Kolkata (+05:30)", f"?interval=day&tz=Asia/Kolkata&from={year}"),
            ("a whole year by day in Europe/Berlin", f"?interval=day&tz=Europe/Berlin&from={year}"),
            ("a whole year by day, one browser", f"?interval=day&browser=browser-1&from={year}"),
        ]:
            timing = time_requests(client, f"/api/v1/links/popular/stats{query}", args.stats_requests)
            print(
                f"stats, {label}: {timing['points']} points, median {timing['p50']:.1f} ms, "
                f"p99 {timing['p99']:.1f} ms over {args.stats_requests} requests (target median < 100 ms)"
            )
        session = run("shell", "-c", BENCH_SESSION).stdout.split()[-1]
        for label, query in [
            ("last 30 days (default)", ""),
            ("last 12 months", "?range=12m"),
            ("all time", "?range=all"),
            ("last 90 days, one browser", "?range=90d&browser=browser-1"),
        ]:
            timing = time_page(port, session, f"/links/popular/{query}", args.stats_requests)
            print(
                f"link page, {label}: median {timing['p50']:.1f} ms, p99 {timing['p99']:.1f} ms "
                f"over {args.stats_requests} requests (target median < 150 ms)"
            )
        return 0
    finally:
        stack.cleanup()


if __name__ == "__main__":
    sys.exit(main())

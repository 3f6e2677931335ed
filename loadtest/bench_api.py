"""API benchmark: `make bench-api`.

Starts its own durable PostgreSQL and Redis (devstack.throwaway) and the
dashboard under gunicorn, then measures, over HTTP with a bearer token:

1. link creation at a steady rate (default 200 requests/s for 30 s), latency
   counted from each request's scheduled start, so a stall that delays later
   requests is counted against them too (no coordinated omission);
2. the stats endpoint of one link whose rollups hold 10,000,000 clicks (a year
   of hourly rollups, breakdowns and visitor sketches as real traffic leaves
   them, written straight into the rollup tables: loadtest/rollup_data.py),
   for every shape of range the API allows, and the selector behind it over
   a whole year by hour, against a 100 ms median;
3. the link page over the same link, with its presets and breakdowns,
   against a 150 ms median.

The publisher process runs beside gunicorn, as in production, so the figures
include delivering every new link to Redis.

    .venv/bin/python loadtest/bench_api.py [--rate 200] [--seconds 30] [--clicks 10000000] [--smoke]
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
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from devstack.throwaway import ThrowawayStack  # noqa: E402
from loadtest.rollup_data import ANALYZE, SPREAD, write_rollups  # noqa: E402

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
            # What became of a link change (docs/api.md, "Live at once"), for steady_creates.
            self.local.published = response.getheader("Slingshot-Publish")
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
    pending = 0

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
            nonlocal pending
            with lock:
                (latencies if status == 201 else failures).append(elapsed if status == 201 else status)
                pending += status == 201 and getattr(client.local, "published", None) == "pending"

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
        "pending": pending,
        "rate": achieved,
        "p50": percentile(latencies, 50) * 1000,
        "p99": percentile(latencies, 99) * 1000,
        "max": max(latencies) * 1000,
    }


def load_rollups(database_url: str, *, link_id: int, clicks: int, days: int) -> int:
    """A year (`days`) of the link's rollups as its traffic leaves them (rollup_data.py)."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn, conn.cursor() as cursor:
        total = write_rollups(cursor, link_id=link_id, clicks=clicks, days=days)
        cursor.execute(f"VACUUM {ANALYZE}")
    return total


# The selector the stats endpoint calls, over a whole year by hour: past the
# API's 2,000 points, so timed in a dashboard process of its own.
YEAR_BY_HOUR = """
import time
from datetime import datetime, timedelta, timezone
from clicks.reports import link_stats
from links.models import Link
link = Link.objects.get(slug="popular")
now = datetime.now(timezone.utc)
timings = []
for _ in range({count}):
    started = time.perf_counter()
    stats = link_stats(link_ids=[link.pk], start=now - timedelta(days={days}), end=now, interval="hour")
    timings.append(time.perf_counter() - started)
timings.sort()
print(len(stats.series), timings[len(timings) // 2] * 1000, timings[-1] * 1000)
"""


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


def parse_args() -> argparse.Namespace:
    """The command line, shrunk to a few seconds' work under --smoke."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--clicks", type=int, default=10_000_000)
    parser.add_argument("--stats-requests", type=int, default=50)
    parser.add_argument("--days", type=int, default=365, help="days of the popular link's rollups")
    parser.add_argument(
        "--smoke", action="store_true", help="a few creations and 3 days of rollups: that the script works (make test)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.rate, args.seconds, args.clicks, args.days, args.stats_requests = 20, 1, 20_000, 3, 3
    return args


@dataclass
class Dashboard:
    """The dashboard under test: its environment, gunicorn's port and a client with a write token."""

    env: dict
    port: int
    client: Client


def manage(env: dict, *command: str) -> subprocess.CompletedProcess:
    """A management command run to its end in `env`, its output captured."""
    return subprocess.run([*MANAGE, *command], env=env, check=True, capture_output=True, text=True)


def start_dashboard(stack: ThrowawayStack, workers: int) -> Dashboard:
    """Migrates the stack, makes a user `bench` and its token, and starts gunicorn and the publisher."""
    env = {
        **os.environ,
        **stack.environment(),
        "API_THROTTLE_RATE": "100000000/min",
        "EDGE_BASE_URL": "http://127.0.0.1:8080",
    }
    manage(env, "migrate", "--no-input")
    manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; get_user_model().objects.create_user('bench')",
    )
    token = manage(env, "create_api_token", "bench", "--scope", "write").stdout.strip()
    port = stack.start_dashboard(env, workers=workers)
    publisher = subprocess.Popen(
        [*MANAGE, "run_publisher"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(stack.root / "publisher.log", "ab"),
    )
    stack.processes.append(publisher)
    return Dashboard(env, port, Client(port, token))


def measure_creates(dashboard: Dashboard, args: argparse.Namespace) -> None:
    """Creates links at --rate for --seconds after a warm-up, and prints the latencies."""
    client = dashboard.client
    # Warm every worker up (imports, connections) at the same rate, unrecorded: the figures are steady state.
    steady_creates(client, rate=args.rate, seconds=1 if args.smoke else 5, threads=args.threads)
    created = steady_creates(client, rate=args.rate, seconds=args.seconds, threads=args.threads)
    print(
        f"link create at {args.rate:.0f}/s for {args.seconds:.0f} s: {created['ok']}/{created['requests']} "
        f"created ({created['rate']:.0f}/s achieved), p50 {created['p50']:.1f} ms, p99 {created['p99']:.1f} ms, "
        f"max {created['max']:.1f} ms (target p99 < 50 ms)"
        + (f"; failures e.g. {created['failures']}" if created["failures"] else "")
    )


def make_popular_link(dashboard: Dashboard, args: argparse.Namespace) -> None:
    """Creates the link `popular` and writes --days of rollups of --clicks clicks for it."""
    client = dashboard.client
    status, body = client.request("POST", "/api/v1/links", {"url": "https://example.com/popular", "slug": "popular"})
    assert status == 201, body
    database_url = dashboard.env["DATABASE_URL"]
    import psycopg

    with psycopg.connect(database_url) as conn:
        link_id = conn.execute("SELECT id FROM links_link WHERE slug = 'popular'").fetchone()[0]
    started = time.monotonic()
    written = load_rollups(database_url, link_id=link_id, clicks=args.clicks, days=args.days)
    total = json.loads(client.request("GET", "/api/v1/links/popular")[1])["clicks"]
    assert total == written, (total, written)
    print(
        f"rollups for {total:,} clicks over {args.days} days written in {time.monotonic() - started:.0f} s: "
        f"every hour's visitor sketches filled, values an hour "
        + ", ".join(f"{dimension} {n}" for dimension, n in SPREAD.items())
    )


def stats_ranges() -> list[tuple[str, str]]:
    """Every shape of range the API allows (at most 2,000 points: 80 days is the longest by hour)."""
    year = time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime(time.time() - 366 * 86400))
    hours_80d = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() - 80 * 86400))
    return [
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
        (
            "a whole year by day, one browser, in Europe/Berlin",
            f"?interval=day&browser=browser-1&tz=Europe/Berlin&from={year}",
        ),
    ]


def measure_stats(dashboard: Dashboard, args: argparse.Namespace) -> None:
    """Times the popular link's stats endpoint for every range, then its selector over a year by hour."""
    for label, query in stats_ranges():
        timing = time_requests(dashboard.client, f"/api/v1/links/popular/stats{query}", args.stats_requests)
        print(
            f"stats, {label}: {timing['points']} points, median {timing['p50']:.1f} ms, "
            f"p99 {timing['p99']:.1f} ms over {args.stats_requests} requests (target median < 100 ms)"
        )
    points, median_ms, slowest_ms = manage(
        dashboard.env, "shell", "-c", YEAR_BY_HOUR.format(count=min(args.stats_requests, 9), days=args.days)
    ).stdout.split()[-3:]
    print(
        f"stats selector, a whole year by hour (past the API's 2,000 points): {points} points, median "
        f"{float(median_ms):.1f} ms, slowest {float(slowest_ms):.1f} ms (target median < 100 ms)"
    )


def measure_link_page(dashboard: Dashboard, args: argparse.Namespace) -> None:
    """Times the popular link's page, signed in, over three of its ranges and one browser's clicks."""
    session = manage(dashboard.env, "shell", "-c", BENCH_SESSION).stdout.split()[-1]
    for label, query in [
        ("last 30 days (default)", ""),
        ("last 12 months", "?range=12m"),
        ("all time", "?range=all"),
        ("last 90 days, one browser", "?range=90d&browser=browser-1"),
    ]:
        timing = time_page(dashboard.port, session, f"/links/popular/{query}", args.stats_requests)
        print(
            f"link page, {label}: median {timing['p50']:.1f} ms, p99 {timing['p99']:.1f} ms "
            f"over {args.stats_requests} requests (target median < 150 ms)"
        )


def main() -> int:
    args = parse_args()
    stack = ThrowawayStack(prefix="slingshot-bench-api-", durable=True)
    try:
        stack.start()
        dashboard = start_dashboard(stack, args.workers)
        print(f"gunicorn with {args.workers} sync workers, PostgreSQL and Redis durable, on {os.cpu_count()} cores")
        measure_creates(dashboard, args)
        make_popular_link(dashboard, args)
        measure_stats(dashboard, args)
        measure_link_page(dashboard, args)
        return 0
    finally:
        stack.cleanup()


if __name__ == "__main__":
    sys.exit(main())

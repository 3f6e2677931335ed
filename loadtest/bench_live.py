"""Pushed clicks benchmark: `make bench-live`.

What a thousand open live pages cost the rest of the dashboard. Starts its
own PostgreSQL and Redis (devstack.throwaway), the dashboard under
gunicorn, `manage.py serve_live`, and the dashboard's front
(dashboard/nginx.conf, as `make run` renders it) in front of both; signs
in, and times a page of the dashboard (a link's page, through the front,
one request at a time: the links list) with no live page open, then with
--pages event streams open through the front on one link while its
clicks are announced --events times a second, each page fetching the
link's live parts when it is told, at most every 10 seconds and after a
wait drawn up to 2 s, as a browser's does (16 at a time),
then with none again. Prints the other page's median and 95th percentile
each way, the fetches the pages made, and serve_live's CPU and memory
with the streams open.

    flock /tmp/slingshot-bench.lock .venv/bin/python loadtest/bench_live.py [--pages 1000] [--events 5] [--smoke]
"""

import argparse
import heapq
import json
import os
import random
import selectors
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import median, quantiles

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import contextlib

import psutil  # noqa: E402
import redis  # noqa: E402

from devstack.dashboard import render_front_conf  # noqa: E402
from devstack.net import free_port, wait_for_port  # noqa: E402
from devstack.nginx import nginx_command  # noqa: E402
from devstack.supervised import sign_in  # noqa: E402
from devstack.throwaway import ThrowawayStack  # noqa: E402

MANAGE = [sys.executable, str(REPO / "dashboard" / "manage.py")]
# app.js's REFRESH_EVERY_MS and REFRESH_SPREAD_MS: a told page fetches its
# report at most this often, after a wait drawn up to SPREAD.
REFRESH_SECONDS = 10.0
SPREAD_SECONDS = 2.0
MAKE_LINK = """
import os
import random
from django.contrib.auth import get_user_model
from links.fields import LinkFields
from links.services import link_create
user = get_user_model().objects.create_user("bench", password=os.environ["BENCH_PASSWORD"])
link = link_create(owner=user, fields=LinkFields(url="https://example.org/launch"))
print(link.slug, link.pk)
"""


class Front:
    def __init__(self, url: str):
        self.dashboard_url = url


def page_times(opener, url: str, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        with opener.open(url, timeout=30) as answer:
            answer.read()
            assert answer.status == 200, answer.status
        times.append((time.perf_counter() - started) * 1000)
    return times


def open_streams(
    port: int, path: str, cookie: str, count: int
) -> tuple[selectors.DefaultSelector, list[socket.socket]]:
    chooser, streams = selectors.DefaultSelector(), []
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\nCookie: {cookie}\r\n\r\n"
    ).encode()
    for n in range(count):
        # Fifty streams an address: the front takes at most 100 from one.
        source = (f"127.0.{n // 50 // 250 + 1}.{n // 50 % 250 + 2}", 0)
        sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=source)
        sock.sendall(request)
        head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head[:200]
        sock.setblocking(False)
        chooser.register(sock, selectors.EVENT_READ)
        streams.append(sock)
    return chooser, streams


def drain(chooser: selectors.DefaultSelector) -> list[socket.socket]:
    """Reads what the streams got: the streams told of clicks, once each."""
    told = []
    for key, _ in chooser.select(timeout=0):
        with contextlib.suppress(BlockingIOError):
            if b"event: clicks" in key.fileobj.recv(65536):
                told.append(key.fileobj)
    return told


def fetch_time(opener, url: str) -> float:
    return page_times(opener, url, 1)[0]


def summary(times: list[float]) -> str:
    return f"median {median(times):.2f} ms, p95 {quantiles(times, n=20)[-1]:.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000, help="live pages (event streams) open at once")
    parser.add_argument("--events", type=float, default=5, help="clicks announced a second, each waking every page")
    parser.add_argument("--requests", type=int, default=300, help="timed requests of the other page, each way")
    parser.add_argument("--smoke", action="store_true", help="50 pages, 30 requests: that the script works (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.pages, args.requests = 50, 30

    stack = ThrowawayStack(prefix="slingshot-bench-live-")
    processes = []
    try:
        stack.start()
        password = "bench-" + os.urandom(8).hex()
        env = {**os.environ, **stack.environment(), "BENCH_PASSWORD": password}
        subprocess.run([*MANAGE, "migrate", "--no-input"], env=env, check=True, capture_output=True)
        slug, link_id = subprocess.run(
            [*MANAGE, "shell", "-c", MAKE_LINK], env=env, check=True, capture_output=True, text=True
        ).stdout.split()[-2:]
        gunicorn_port = stack.start_dashboard(env, workers=2)
        live_port = free_port()
        live = subprocess.Popen(
            [*MANAGE, "serve_live", "--port", str(live_port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        processes.append(live)
        wait_for_port(live_port, process=live)
        front_port = free_port()
        render_front_conf(stack.root / "front", front_port, gunicorn_port=gunicorn_port, live_port=live_port)
        front = subprocess.Popen(nginx_command(stack.root / "front"), stderr=subprocess.DEVNULL)
        processes.append(front)
        wait_for_port(front_port, process=front)

        base = f"http://127.0.0.1:{front_port}"
        opener = sign_in(Front(base), "bench", password)
        assert opener is not None, "could not sign in"
        cookie = "; ".join(
            f"{c.name}={c.value}" for h in opener.handlers if hasattr(h, "cookiejar") for c in h.cookiejar
        )
        page = f"{base}/links/"
        report = f"{base}/links/{slug}/report"
        with opener.open(f"{base}/links/{slug}/live", timeout=10) as answer:
            events_path = json.loads(answer.read())["events"]

        page_times(opener, page, 10)  # warm-up
        before = page_times(opener, page, args.requests)

        client = redis.Redis(host="127.0.0.1", port=stack.redis_port, password=stack.redis_password, db=0)
        chooser, streams = open_streams(front_port, events_path, cookie, args.pages)
        process = psutil.Process(live.pid)
        cpu_before = sum(process.cpu_times()[:2])
        fetchers = ThreadPoolExecutor(16)
        fetches, refreshed, scheduled, waiting = [], {}, [], set()
        started = time.monotonic()
        during, announced, got, next_event = [], 0, 0, started
        while len(during) < args.requests:
            now = time.monotonic()
            if now >= next_event:
                client.publish(f"slingshot:live:link:{link_id}", b"1")
                announced += 1
                next_event = now + 1 / args.events
            during += page_times(opener, page, 1)
            for stream in drain(chooser):
                got += 1
                # As app.js does: the counts come with the event; the report at
                # most every REFRESH seconds, after a wait drawn up to SPREAD.
                if stream.fileno() not in waiting:
                    since = refreshed.get(stream.fileno(), float("-inf"))
                    due = now + max(0.0, since + REFRESH_SECONDS - now) + random.uniform(0, SPREAD_SECONDS)
                    heapq.heappush(scheduled, (due, stream.fileno()))
                    waiting.add(stream.fileno())
            while scheduled and scheduled[0][0] <= time.monotonic():
                _, number = heapq.heappop(scheduled)
                waiting.discard(number)
                refreshed[number] = time.monotonic()
                fetches.append(fetchers.submit(fetch_time, opener, report))
        elapsed = time.monotonic() - started
        time.sleep(0.5)
        got += len(drain(chooser))
        fetchers.shutdown(wait=True)
        fetched = [future.result() for future in fetches]
        cpu = sum(process.cpu_times()[:2]) - cpu_before
        rss = process.memory_info().rss / 1024 / 1024
        for sock in streams:
            sock.close()
        time.sleep(0.5)
        after = page_times(opener, page, args.requests)

        print(
            f"serve_live with {args.pages} open pages: {rss:.0f} MB resident, {cpu / elapsed * 100:.1f} % of a core "
            f"over {elapsed:.1f} s, {announced} announcements, {got:,} events read by the pages"
        )
        print(f"the pages' fetches of the link's live parts: {len(fetched):,}, {summary(fetched)}")
        print(f"the links list through the front, no live page open: {summary(before)}")
        print(f"the links list through the front, {args.pages} live pages open: {summary(during)}")
        print(f"the links list through the front, none open again: {summary(after)}")
        print(f"open pages / none, medians: {median(during) / median(before + after):.2f}")
        return 0
    finally:
        for process in processes:
            process.terminate()
        stack.cleanup()


if __name__ == "__main__":
    sys.exit(main())

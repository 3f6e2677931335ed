"""Pushed clicks benchmark: `make bench-live`.

What a thousand open live pages cost the rest of the dashboard. Starts its
own PostgreSQL and Redis (devstack.throwaway), the dashboard under
gunicorn, the click importer (`manage.py import_clicks`), `manage.py
serve_live`, and the dashboard's front (dashboard/nginx.conf, as `make run`
renders it) in front of both; signs in, and times a page of the dashboard
(through the front, one request at a time: the links list) while a click
on one link (on --links links in turn) is written to the click stream
--events times a second (as the edge writes it) and stored by the
importer: with no live page open, then with --pages event streams open
through the front on that link (spread over those links), each told
of its clicks and pushed the link's live part (its report, made by
serve_live) as a browser's page is, then with none again. Prints the other
page's median and 95th percentile each way, the events and parts the pages
read, and serve_live's CPU and memory with the streams open.

    flock /tmp/slingshot-bench.lock .venv/bin/python loadtest/bench_live.py [--pages 1000] [--events 5]
        [--links 1] [--smoke]
"""

import argparse
import contextlib
import json
import os
import selectors
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import median, quantiles
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "dashboard"))

import psutil  # noqa: E402

from devstack.dashboard import render_front_conf  # noqa: E402
from devstack.net import free_port, wait_for_port  # noqa: E402
from devstack.nginx import nginx_command  # noqa: E402
from devstack.supervised import session_cookie, sign_in  # noqa: E402
from devstack.throwaway import ThrowawayStack  # noqa: E402

MANAGE = [sys.executable, str(REPO / "dashboard" / "manage.py")]
MAKE_LINK = """
import os
import random
from django.contrib.auth import get_user_model
from links.fields import LinkFields
from links.services import link_create
user = get_user_model().objects.create_user("bench", password=os.environ["BENCH_PASSWORD"])
for n in range(int(os.environ["BENCH_LINKS"])):
    link = link_create(owner=user, fields=LinkFields(url=f"https://example.org/launch/{n}"))
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
    port: int, paths: list[str], cookie: str, count: int
) -> tuple[selectors.DefaultSelector, list[socket.socket]]:
    """`count` streams, the n-th on the link of paths[n % len(paths)]."""
    chooser, streams = selectors.DefaultSelector(), []
    for n in range(count):
        request = (
            f"GET {paths[n % len(paths)]} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
            f"Cookie: {cookie}\r\n\r\n"
        ).encode()
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


def drain(chooser: selectors.DefaultSelector, read: Counter) -> None:
    """Reads what the streams got, counting its events by kind and its bytes."""
    for key, _ in chooser.select(timeout=0):
        with contextlib.suppress(BlockingIOError):
            while data := key.fileobj.recv(1 << 20):
                read["bytes"] += len(data)
                for kind in (b"clicks", b"part"):
                    read[kind.decode()] += data.count(b"event: " + kind + b"\n")


def summary(times: list[float]) -> str:
    return f"median {median(times):.2f} ms, p95 {quantiles(times, n=20)[-1]:.2f} ms"


def parse_args() -> argparse.Namespace:
    """The command line, shrunk to a few seconds' work under --smoke."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000, help="live pages (event streams) open at once")
    parser.add_argument("--events", type=float, default=5, help="clicks written a second")
    parser.add_argument("--links", type=int, default=1, help="links the pages are spread over, and the clicks")
    parser.add_argument("--requests", type=int, default=600, help="timed requests of the other page, each way")
    parser.add_argument("--smoke", action="store_true", help="50 pages, 30 requests: that the script works (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.pages, args.requests = 50, 30
    return args


class Services(NamedTuple):
    """What start_services started: the links made, serve_live and the front's port."""

    links: list[tuple[str, int]]
    live: subprocess.Popen
    front_port: int


def start_services(stack: ThrowawayStack, args: argparse.Namespace, password: str, processes: list) -> Services:
    """Migrates the stack, makes the user and its links, and starts gunicorn, the importer, serve_live and the front."""
    env = {**os.environ, **stack.environment(), "BENCH_PASSWORD": password, "BENCH_LINKS": str(args.links)}
    subprocess.run([*MANAGE, "migrate", "--no-input"], env=env, check=True, capture_output=True)
    made = subprocess.run(
        [*MANAGE, "shell", "-c", MAKE_LINK], env=env, check=True, capture_output=True, text=True
    ).stdout.split()[-2 * args.links :]
    links = [(made[n], int(made[n + 1])) for n in range(0, len(made), 2)]
    gunicorn_port = stack.start_dashboard(env, workers=2)
    importer = subprocess.Popen(
        [*MANAGE, "import_clicks", "--block-ms", "100"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    processes.append(importer)
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
    return Services(links, live, front_port)


def setup_django(stack: ThrowawayStack) -> None:
    """Sets Django up in this process on the stack, for the clicks it writes to the click stream."""
    os.environ.update(stack.environment(), DJANGO_SETTINGS_MODULE="slingshot.settings")
    import django

    django.setup()


@dataclass
class Browser:
    """A signed-in browser of the front: the page it times, and the clicks written while it does."""

    opener: urllib.request.OpenerDirector
    cookie: str
    page: str
    events_paths: list[str]
    links: list[tuple[str, int]]
    events: float
    clicked: int = 0

    def write_click(self) -> None:
        """Writes a click on the next link to the click stream, as the edge writes it."""
        from testing.streams import add_entry

        slug, link = self.links[self.clicked % len(self.links)]
        now = int(datetime.now(UTC).timestamp() * 1000)
        add_entry([{"ts": now, "slug": slug, "link": link, "ip": "198.51.100.7", "ua": "bench", "ref": ""}])
        self.clicked += 1

    def timed_with_clicks(self, count: int, chooser=None, read=None) -> list[float]:
        """The page timed `count` times while a click is written every 1/--events s."""
        times, next_click = [], time.monotonic()
        while len(times) < count:
            if time.monotonic() >= next_click:
                self.write_click()
                next_click += 1 / self.events
            times += page_times(self.opener, self.page, 1)
            if chooser is not None:
                drain(chooser, read)
        return times


def sign_in_browser(services: Services, password: str, events: float) -> Browser:
    """Signs `bench` in through the front and asks each link's live page where its events stream is."""
    base = f"http://127.0.0.1:{services.front_port}"
    opener = sign_in(Front(base), "bench", password)
    assert opener is not None, "could not sign in"
    cookie = session_cookie(opener)
    events_paths = []
    for slug, _ in services.links:
        with opener.open(f"{base}/links/{slug}/live", timeout=10) as answer:
            events_paths.append(json.loads(answer.read())["events"])
    return Browser(opener, cookie, f"{base}/links/", events_paths, services.links, events)


class OpenPages(NamedTuple):
    """The page's times with the live pages open, what the pages read, and serve_live's cost meanwhile."""

    times: list[float]
    read: Counter
    elapsed: float
    cpu: float
    rss_mb: float


def timed_with_open_pages(browser: Browser, services: Services, pages: int, requests: int) -> OpenPages:
    """Opens `pages` event streams, times the page `requests` times while they read, then closes them."""
    chooser, streams = open_streams(services.front_port, browser.events_paths, browser.cookie, pages)
    process = psutil.Process(services.live.pid)
    cpu_before = sum(process.cpu_times()[:2])
    read = Counter()
    started = time.monotonic()
    during = browser.timed_with_clicks(requests, chooser, read)
    elapsed = time.monotonic() - started
    cpu = sum(process.cpu_times()[:2]) - cpu_before
    rss = process.memory_info().rss / 1024 / 1024
    time.sleep(0.5)
    drain(chooser, read)
    for sock in streams:
        sock.close()
    return OpenPages(during, read, elapsed, cpu, rss)


def report(
    args: argparse.Namespace, clicked: int, before: list[float], open_pages: OpenPages, after: list[float]
) -> None:
    """Prints serve_live's cost, what the pages read, and the page's times each way."""
    during, read, elapsed = open_pages.times, open_pages.read, open_pages.elapsed
    print(
        f"serve_live with {args.pages} open pages on {args.links} link(s): {open_pages.rss_mb:.0f} MB resident, "
        f"{open_pages.cpu / elapsed * 100:.1f} % of a core over {elapsed:.1f} s"
    )
    print(
        f"clicks written {clicked:,} at {args.events:g}/s; the pages read {read['clicks']:,} click events "
        f"and {read['part']:,} parts pushed, {read['bytes'] / elapsed / 1e6:.1f} MB/s"
    )
    print(f"the links list through the front, no live page open: {summary(before)}")
    print(f"the links list through the front, {args.pages} live pages open: {summary(during)}")
    print(f"the links list through the front, none open again: {summary(after)}")
    print(f"open pages / none, medians: {median(during) / median(before + after):.2f}")
    print(f"open pages / none, p95: {quantiles(during, n=20)[-1] / quantiles(before + after, n=20)[-1]:.2f}")


def main() -> int:
    args = parse_args()
    stack = ThrowawayStack(prefix="slingshot-bench-live-")
    processes = []
    try:
        stack.start()
        password = "bench-" + os.urandom(8).hex()
        services = start_services(stack, args, password, processes)
        setup_django(stack)
        browser = sign_in_browser(services, password, args.events)
        page_times(browser.opener, browser.page, 10)  # warm-up
        before = browser.timed_with_clicks(args.requests)
        open_pages = timed_with_open_pages(browser, services, args.pages, args.requests)
        time.sleep(0.5)
        after = browser.timed_with_clicks(args.requests)
        report(args, browser.clicked, before, open_pages, after)
        return 0
    finally:
        for process in processes:
            process.terminate()
        stack.cleanup()


if __name__ == "__main__":
    sys.exit(main())

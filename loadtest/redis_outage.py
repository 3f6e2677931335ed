"""`make redis-outage`: what a Redis outage longer than the cache TTL costs
the edge's redirects (docs/operations.md, "What a fault costs").

Starts an edge (2 workers, the default EDGE_CACHE_TTL of 60 s and
EDGE_NEGATIVE_TTL of 30 s) on a Redis of its own, publishes --links links,
and has visitors ask for them at --rate a second over new connections, so
that every worker caches each. Then Redis is hung (SIGSTOP) or killed for
--seconds (default 90: longer than the TTL), then back. Prints, for the
time before, during and after: redirects served and visits failed (any
other answer, 503 included); what a slug the edge never cached was answered
during the outage; and how long after Redis came back a link changed in
the outage was served new by every worker. Exits 1 if a cached link failed
a visit.
"""

import argparse
import http.client
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import orjson
import redis

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from devstack.edge import edge_command, render_edge_conf
from devstack.net import free_port, wait_for_port
from devstack.throwaway import ThrowawayStack  # noqa: E402
from slingshot.contract import LINK_CHANGES_STREAM, link_key  # noqa: E402


def get(port: int, path: str) -> tuple[int, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status, {name.lower(): value for name, value in response.getheaders()}
    finally:
        conn.close()


class Phases:
    """Visitors over new connections; each answer counted in the phase it came in."""

    def __init__(self, port: int, slugs: list[str], rate: float, threads: int = 4) -> None:
        self.port, self.slugs, self.interval = port, slugs, threads / rate
        self.phase = "before"
        self.counts: dict[str, Counter] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.visit, args=(n,), daemon=True) for n in range(threads)]

    def visit(self, n: int) -> None:
        i = n
        while not self.stopping.wait(self.interval):
            phase = self.phase
            try:
                status, _ = get(self.port, f"/{self.slugs[i % len(self.slugs)]}")
                what = str(status)
            except (OSError, http.client.HTTPException) as exc:
                what = type(exc).__name__
            with self.lock:
                self.counts.setdefault(phase, Counter())[what] += 1
            i += 1

    def __enter__(self) -> "Phases":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join()


def main() -> int:
    parser = argparse.ArgumentParser(prog="make redis-outage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--how", choices=["hung", "killed"], default="hung")
    parser.add_argument("--seconds", type=float, default=90.0, help="how long Redis is away")
    parser.add_argument("--rate", type=float, default=300.0, help="visits a second")
    parser.add_argument("--links", type=int, default=20)
    args = parser.parse_args()

    stack = ThrowawayStack(prefix="slingshot-redis-outage-", durable=True)
    stack.start_redis()
    client = redis.Redis(port=stack.redis_port, password=stack.redis_password)
    prefix = stack.root / "edge"
    port = free_port()
    render_edge_conf(prefix, port)
    env = {**os.environ, "REDIS_PORT": str(stack.redis_port), "REDIS_PASSWORD": stack.redis_password}
    edge = subprocess.Popen(
        edge_command(prefix, workers=2),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, process=edge)
        slugs = [f"outage-{n}" for n in range(args.links)]
        changed = "outage-changed"
        for n, slug in enumerate([*slugs, changed], 1):
            client.set(link_key(slug), orjson.dumps({"id": n, "url": f"https://example.com/{slug}"}))
        time.sleep(1)
        with Phases(port, [*slugs, changed], args.rate) as phases:
            time.sleep(10)
            phases.phase = "during"
            down = time.monotonic()
            if args.how == "hung":
                os.kill(stack.redis.pid, signal.SIGSTOP)
            else:
                stack.redis.kill()
                stack.redis.wait(timeout=30)
            time.sleep(args.seconds / 2)
            uncached = get(port, "/never-cached")
            time.sleep(args.seconds / 2)
            if args.how == "hung":
                os.kill(stack.redis.pid, signal.SIGCONT)
            else:
                stack.start_redis()
            phases.phase = "after"
            away = time.monotonic() - down
            # Changed while the edge could not read it, with no change
            # notification: as if the notification had been lost.
            new_url = "https://example.com/outage-changed/new"
            client.set(link_key(changed), orjson.dumps({"id": args.links + 1, "url": new_url}))
            back = time.monotonic()
            while any(get(port, f"/{changed}")[1].get("location") != new_url for _ in range(8)):
                time.sleep(0.01)
            followed = time.monotonic() - back
            time.sleep(10)
        client.xadd(LINK_CHANGES_STREAM, {"slug": changed})
    finally:
        edge.send_signal(signal.SIGQUIT)
        edge.wait(timeout=30)
        stack.cleanup()

    print(f"Redis {args.how} for {away:.1f} s under {args.rate:g} visits/s to {args.links + 1} cached links")
    failed = 0
    for phase in ("before", "during", "after"):
        counts = phases.counts.get(phase, Counter())
        bad = sum(n for what, n in counts.items() if what != "302")
        failed += bad
        print(f"{phase}: {counts['302']} redirects served, {bad} visits failed {dict(counts)}")
    print(f"a slug never cached, during the outage: HTTP {uncached[0]}, Retry-After {uncached[1].get('retry-after')}")
    print(f"a link changed in the outage served new by every worker {followed:.2f} s after Redis came back")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

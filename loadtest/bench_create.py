"""Link creation benchmark: `make bench-create`.

Starts its own durable PostgreSQL and Redis (devstack.throwaway), the
dashboard under gunicorn (4 sync workers) and the publisher, as `make run`
does, and drives POST /api/v1/links at fixed rates (100, 200 and 300 a second
by default), latency counted from each request's scheduled start (no
coordinated omission, loadtest/bench_api.py's steady_creates). For each rate
it prints the rate achieved and p50 / p99.

`--against DIR` runs the same rates on the dashboard of another checkout
(e.g. a worktree of main) on a stack of its own, started beside this one:
at each rate the two are measured one after the other, in alternating
order, so the machine's mood is as near the same for both as it gets.

`--profile N` first times N creates in this process through Django's test
client against the same kind of stack: the SQL statements one create sends
(CaptureQueriesContext), the CPU per create and its top costs (cProfile),
and the publisher's CPU per link delivered.

`--visible N` (after the rates) asks an edge (of the same checkout, on the
same stack) at once after each of N creates, edits and deletions answered,
and then until it serves the change: how many creates were redirected at
the first visit, and how long after the answer each change was served
(docs/api.md, "Live at once"; docs/contract.md, "How soon a change is
served").

    .venv/bin/python loadtest/bench_create.py [--rates 100,200,300] [--seconds 20] [--against /work/wt/base]
    .venv/bin/python loadtest/bench_create.py --profile 500 --rates ''
    .venv/bin/python loadtest/bench_create.py --rates '' --visible 300 [--against /work/wt/base]
    .venv/bin/python loadtest/bench_create.py --smoke   # a few seconds, for `make test`
"""

import argparse
import cProfile
import http.client
import io
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "loadtest"))

from bench_api import Client, steady_creates  # noqa: E402
from procstat import children, cpu_seconds  # noqa: E402

from devstack.dashboard import gunicorn_command
from devstack.edge import edge_command, render_edge_conf
from devstack.net import free_port, wait_for_port
from devstack.throwaway import ThrowawayStack  # noqa: E402


def prepare(stack: ThrowawayStack, dashboard: Path) -> tuple[dict, str]:
    """The stack's environment, migrated by `dashboard`'s code, and a write token of a user `bench`."""
    env = {
        **os.environ,
        **stack.environment(),
        "API_THROTTLE_RATE": "100000000/min",
        "EDGE_BASE_URL": "http://127.0.0.1:8080",
    }
    env.pop("LINK_PUBLISH_INLINE", None)  # each checkout's own default, as `make run` (the tests' differs)
    manage = [sys.executable, str(dashboard / "manage.py")]
    run = lambda *cmd: subprocess.run([*manage, *cmd], env=env, check=True, capture_output=True, text=True)  # noqa: E731
    run("migrate", "--no-input")
    run("shell", "-c", "from django.contrib.auth import get_user_model; get_user_model().objects.create_user('bench')")
    return env, run("create_api_token", "bench", "--scope", "write").stdout.strip()


class Target:
    """gunicorn and the publisher running a checkout's dashboard on a fresh stack of their own."""

    def __init__(self, name: str, checkout: Path, *, workers: int) -> None:
        self.commit = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        self.name, self.dashboard, self.workers = name, checkout / "dashboard", workers
        self.stack = ThrowawayStack(prefix="slingshot-bench-create-", durable=True)

    def start(self) -> None:
        stack = self.stack
        stack.start()
        env, token = prepare(stack, self.dashboard)
        port = free_port()
        command = gunicorn_command(port, workers=self.workers)
        command[command.index("--chdir") + 1] = str(self.dashboard)
        gunicorn = stack._spawn(command, "gunicorn", env=env)
        wait_for_port(port, process=gunicorn)
        publisher = stack._spawn(
            [sys.executable, str(self.dashboard / "manage.py"), "run_publisher"], "publisher", env=env
        )
        self.client = Client(port, token)
        self.edge_port = free_port()
        prefix = stack.root / "edge"
        render_edge_conf(prefix, self.edge_port, repo=self.dashboard.parent)
        edge = stack._spawn(edge_command(prefix, workers=2), "edge", env=env)
        wait_for_port(self.edge_port, process=edge)
        self.groups = {
            "gunicorn": lambda: [gunicorn.pid, *children(gunicorn.pid)],
            "postgres": lambda: [stack.postgres.pid, *children(stack.postgres.pid)],
            "publisher": lambda: [publisher.pid],
            "redis": lambda: [stack.redis.pid],
        }

    def measure(self, rate: float, seconds: float) -> dict:
        """Creates at `rate` for `seconds`, with the CPU each process spent per create."""
        time.sleep(2)  # what an overloaded rate left queued drains first
        # Per process: a PostgreSQL backend may end (and a new one start) meanwhile.
        before = {name: {pid: cpu_seconds([pid]) for pid in pids()} for name, pids in self.groups.items()}
        load_before = sum(os.times()[:2])
        result = {**steady_creates(self.client, rate=rate, seconds=seconds, threads=64), "target": rate}
        cpu = {
            name: sum(cpu_seconds([pid]) - before[name].get(pid, 0) for pid in pids())
            for name, pids in self.groups.items()
        }
        cpu["load generator"] = sum(os.times()[:2]) - load_before
        result["cpu"] = {name: spent / max(result["ok"], 1) * 1000 for name, spent in cpu.items()}
        return result

    def visit(self, slug: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.edge_port, timeout=10)
        try:
            conn.request("GET", f"/{slug}")
            response = conn.getresponse()
            response.read()
            return response.status, response.getheader("Location", "")
        finally:
            conn.close()

    def until_served(self, slug: str, wanted, timeout: float = 10.0) -> float:
        """Seconds until the edge's answer for `slug` is `wanted` (status, Location), asked without pause."""
        started = time.monotonic()
        while self.visit(slug) != wanted:
            if time.monotonic() - started > timeout:
                return float("inf")
        return time.monotonic() - started

    def visible(self, count: int) -> dict:
        """Creates, edits and deletes `count` links one after another, each
        asked of the edge the moment its answer came (both workers: two visits)."""
        first, created, edited, deleted = 0, [], [], []
        slugs = []
        for index in range(count):
            url = f"https://example.com/visible/{index}"
            status, body = self.client.request("POST", "/api/v1/links", {"url": url})
            assert status == 201, body[:300]
            slug = json.loads(body)["slug"]
            slugs.append(slug)
            first += [self.visit(slug), self.visit(slug)] == [(302, url)] * 2
            created.append(self.until_served(slug, (302, url)))
        for index, slug in enumerate(slugs):
            url = f"https://example.com/edited/{index}"
            status, body = self.client.request("PATCH", f"/api/v1/links/{slug}", {"url": url})
            assert status == 200, body[:300]
            edited.append(self.until_served(slug, (302, url)))
        for slug in slugs:
            status, body = self.client.request("DELETE", f"/api/v1/links/{slug}")
            assert status == 204, body[:300]
            deleted.append(self.until_served(slug, (404, "")))
        return {"first": first, "created": created, "edited": edited, "deleted": deleted}


def spread(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return f"p50 {at(0.5):.1f} ms, p99 {at(0.99):.1f} ms, max {ordered[-1] * 1000:.1f} ms"


# What the publisher finds per delivery at 300 creates/s: it waits 20 ms
# after a NOTIFY so that changes committed together go out together.
PUBLISHER_BATCH = 6


def profile(count: int) -> None:
    """`count` creates through Django's test client, in this process, on a fresh stack."""
    stack = ThrowawayStack(prefix="slingshot-bench-create-", durable=True)
    try:
        stack.start()
        env, token = prepare(stack, REPO / "dashboard")
        os.environ.update(env)
        os.environ["DJANGO_SETTINGS_MODULE"] = "slingshot.settings"
        sys.path.insert(0, str(REPO / "dashboard"))
        import django

        django.setup()
        from django.db import connection
        from django.test import Client as DjangoClient
        from django.test.utils import CaptureQueriesContext

        from links.delivery import deliver_outbox
        from links.models import Link

        client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST="127.0.0.1")
        sequence = iter(range(10**9))

        def create() -> None:
            response = client.post(
                "/api/v1/links", {"url": f"https://example.com/bench/{next(sequence)}"}, content_type="application/json"
            )
            assert response.status_code == 201, response.content[:300]

        for _ in range(50):  # imports, caches, connections
            create()
        deliver_outbox()
        with CaptureQueriesContext(connection) as queries:
            create()
        print(f"SQL statements per create: {len(queries.captured_queries)}")
        for query in queries.captured_queries:
            print(f"  {query['sql'][:160]}")

        started = time.process_time()
        for _ in range(count):
            create()
        spent = time.process_time() - started
        print(f"\ncreate: {spent / count * 1000:.2f} ms of this process's CPU each, over {count} (not profiled)")

        profiler = cProfile.Profile(time.process_time)
        started = time.process_time()
        profiler.enable()
        for _ in range(count):
            create()
        profiler.disable()
        spent = time.process_time() - started
        print(f"\ncreate: {spent / count * 1000:.2f} ms of this process's CPU each, over {count} (profiled)")
        _top(profiler, "create")

        # The publisher's share alone: the creates leave their changes to it.
        from django.conf import settings

        settings.LINK_PUBLISH_INLINE = False
        deliver_outbox()
        publisher, spent, delivered = cProfile.Profile(time.process_time), 0.0, 0
        for index in range(count):
            create()
            if index % PUBLISHER_BATCH == PUBLISHER_BATCH - 1 or index == count - 1:
                started = time.process_time()
                publisher.enable()
                delivered += deliver_outbox()
                publisher.disable()
                spent += time.process_time() - started
        print(
            f"\npublisher: {spent / delivered * 1000:.2f} ms of CPU per link delivered, {delivered} links "
            f"in batches of {PUBLISHER_BATCH} (profiled)"
        )
        _top(publisher, "publisher", lines=20)
        assert Link.objects.count() == 3 * count + 51
    finally:
        stack.cleanup()


def _top(profiler: cProfile.Profile, name: str, lines: int = 40) -> None:
    """The costliest calls, inclusive then exclusive; the whole profile to
    $BENCH_CREATE_PROFILE-<name>.prof if set, for pstats or snakeviz."""
    if dump := os.environ.get("BENCH_CREATE_PROFILE"):
        profiler.dump_stats(f"{dump}-{name}.prof")
    for order, count in (("cumulative", lines), ("tottime", lines // 2)):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(count)
        text = out.getvalue()
        print(f"by {order}:\n" + text[text.find("   ncalls") :].rstrip().replace(str(REPO) + "/", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="100,200,300", help="requests a second, comma-separated ('' for none)")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--against", type=Path, help="another checkout, measured the same way right after")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile N creates in-process first")
    parser.add_argument("--visible", type=int, default=0, metavar="N", help="then N creates, edits and deletions")
    parser.add_argument("--smoke", action="store_true", help="a few seconds at a low rate and a short profile")
    args = parser.parse_args()
    if args.smoke:
        args.rates, args.seconds, args.warmup, args.workers, args.profile, args.visible = "20", 2, 1, 2, 20, 10
    rates = [float(rate) for rate in args.rates.split(",") if rate.strip()]

    if args.profile:
        profile(args.profile)
    if not rates and not args.visible:
        return 0
    targets = [Target("this checkout", REPO, workers=args.workers)]
    if args.against:
        targets.append(Target(str(args.against), args.against.resolve(), workers=args.workers))
    print(f"\ngunicorn with {args.workers} sync workers and the publisher, PostgreSQL and Redis durable, ", end="")
    print(f"on {os.cpu_count()} cores; {args.seconds:.0f} s per rate, the checkouts in turn at each rate")
    try:
        for target in targets:
            target.start()
        for target in targets:  # every worker warmed up (imports, connections), unrecorded
            steady_creates(target.client, rate=rates[0] if rates else 20, seconds=args.warmup, threads=32)
        for index, rate in enumerate(rates):
            for target in targets if index % 2 == 0 else reversed(targets):
                result = target.measure(rate, args.seconds)
                print(
                    f"{target.name} ({target.commit}): link create at {rate:.0f}/s: {result['ok']}/{result['requests']} "
                    f"created ({result['rate']:.0f}/s achieved), p50 {result['p50']:.1f} ms, "
                    f"p99 {result['p99']:.1f} ms, max {result['max']:.1f} ms (target p99 < 50 ms at 300/s)"
                    + (f"; {result['pending']} answered pending" if result["pending"] else "")
                    + (f"; failures e.g. {result['failures']}" if result["failures"] else ""),
                    flush=True,
                )
                print(
                    f"  CPU per create: {sum(result['cpu'].values()):.2f} ms, "
                    + ", ".join(f"{name} {spent:.2f}" for name, spent in result["cpu"].items()),
                    flush=True,
                )
        for target in targets if args.visible else ():
            seen = target.visible(args.visible)
            print(
                f"{target.name} ({target.commit}): {seen['first']}/{args.visible} new links redirected at the "
                f"first visits after their create answered; served after the answer: created {spread(seen['created'])}; "
                f"edited {spread(seen['edited'])}; deleted {spread(seen['deleted'])}",
                flush=True,
            )
    finally:
        for target in targets:
            target.stack.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

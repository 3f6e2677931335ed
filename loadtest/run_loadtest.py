"""`make loadtest`: seed, run Locust headless, wait for the importer, reconcile.

Targets the stack named by SLINGSHOT_EDGE_URL and SLINGSHOT_DASHBOARD_URL
(its database reached through DATABASE_URL, or `.run/env`); without them it
starts the local stack (`make run`'s `python -m devstack run`) and stops it afterwards.

Locust reads its own LOCUST_RUN_TIME, LOCUST_USERS and LOCUST_SPAWN_RATE;
defaults here are 60s, 50 users, 10 users/s. Reports (HTML and CSV) go to
LOADTEST_REPORTS (default .run/loadtest/reports). LOADTEST_LINKS sets how many
links are seeded (default 10000), LOADTEST_USER_CLASSES limits the user
classes (e.g. "RedirectUser ApiUser"; default all). The run passes when every
redirect Locust counted is one click stored in PostgreSQL: it prints
`reconciled: N/N clicks` and exits 1 on any difference or failed request.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from devstack.net import wait_for_port

REDIRECT_NAME = "/[slug]"
DEFAULTS = {
    "LOCUST_RUN_TIME": "60s",
    "LOCUST_USERS": "50",
    "LOCUST_SPAWN_RATE": "10",
    # Users finish the request they are in when the time is up: one killed
    # mid-request would reach the edge (a click) without Locust counting it.
    "LOCUST_STOP_TIMEOUT": "10",
}


def start_local_stack() -> subprocess.Popen:
    from devstack.envfile import env_file
    from devstack.programs import run_dir

    subprocess.run([sys.executable, "-m", "devstack", "prepare"], cwd=REPO, check=True)
    # This process reads the stack's settings as manage.py does, from its env file.
    os.environ.setdefault("SLINGSHOT_ENV_FILE", str(env_file(run_dir())))
    return subprocess.Popen(
        [sys.executable, "-m", "devstack", "run"],
        cwd=REPO,
        start_new_session=True,
        stdout=open(run_dir() / "loadtest-stack.log", "ab"),
        stderr=subprocess.STDOUT,
    )


def wait_for(url: str, process: subprocess.Popen | None) -> None:
    parts = urlsplit(url)
    wait_for_port(parts.port or 80, timeout=180, process=process)


def percentile(histogram: dict[str, int], pct: float) -> float:
    """From Locust's response-time histogram (rounded ms -> count)."""
    points = sorted((float(ms), n) for ms, n in histogram.items())
    wanted, seen = pct / 100 * sum(n for _, n in points), 0
    for ms, n in points:
        seen += n
        if seen >= wanted:
            return ms
    return points[-1][0] if points else 0.0


def summary(stats_json: Path) -> str:
    lines = [f"{'request':<34} {'count':>8} {'failed':>6} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7}"]
    for e in json.loads(stats_json.read_text()):
        seconds = max(e["last_request_timestamp"] - e["start_time"], 1e-9)
        lines.append(
            f"{e['method'] + ' ' + e['name']:<34} {e['num_requests']:>8} {e['num_failures']:>6} "
            f"{e['num_requests'] / seconds:>8.1f} {percentile(e['response_times'], 50):>7.0f} "
            f"{percentile(e['response_times'], 99):>7.0f}"
        )
    return "\n".join(lines)


def final_counts(stats_json: Path) -> tuple[int, int, int]:
    """(redirects, failed redirects, failed requests of any kind) from Locust's
    final stats. (Its CSV is written on a timer and can miss the last seconds.)"""
    entries = json.loads(stats_json.read_text())
    redirects = [e for e in entries if e["name"] == REDIRECT_NAME]
    return (
        sum(e["num_requests"] for e in redirects),
        sum(e["num_failures"] for e in redirects),
        sum(e["num_failures"] for e in entries),
    )


def wait_for_import(*, timeout: float) -> None:
    from clicks.stream import import_lag
    from slingshot.redis import get_redis

    deadline = time.monotonic() + timeout
    time.sleep(1.0)  # the edge flushes its click buffers every 0.1 s
    while True:
        lag = import_lag(client=get_redis())
        if lag.backlog == 0:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the importer did not drain: {lag}")
        print(f"waiting for the importer: {lag.backlog} entries left", flush=True)
        time.sleep(1.0)


def main() -> int:
    # Settings come from the environment (above). Parsed so that --help, or
    # a mistyped option, does not start a run.
    argparse.ArgumentParser(prog="make loadtest", description=__doc__.split("\n\n")[0]).parse_args()
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
    reports = Path(os.environ.get("LOADTEST_REPORTS", REPO / ".run" / "loadtest" / "reports"))
    reports.mkdir(parents=True, exist_ok=True)
    stack = None
    if not (os.environ.get("SLINGSHOT_EDGE_URL") and os.environ.get("SLINGSHOT_DASHBOARD_URL")):
        print("starting the local stack (make run)", flush=True)
        stack = start_local_stack()
        from devstack.envfile import read_env_file

        env = read_env_file()
        os.environ.setdefault("SLINGSHOT_EDGE_URL", f"http://127.0.0.1:{env['EDGE_PORT']}")
        os.environ.setdefault("SLINGSHOT_DASHBOARD_URL", f"http://127.0.0.1:{env['DASHBOARD_PORT']}")
    try:
        wait_for(os.environ["SLINGSHOT_EDGE_URL"], stack)
        wait_for(os.environ["SLINGSHOT_DASHBOARD_URL"], stack)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "slingshot.settings")
        import django

        django.setup()
        from django.core.management import call_command

        from clicks.models import Click
        from links.models import Link

        seed_file = reports.parent / "seed.json"
        call_command("seed_loadtest", "--links", os.environ.get("LOADTEST_LINKS", "10000"), "--out", str(seed_file))
        started = datetime.now(timezone.utc) - timedelta(seconds=1)
        locust = subprocess.run(
            [
                str(REPO / ".venv" / "bin" / "locust"),
                "-f",
                str(REPO / "loadtest" / "locustfile.py"),
                "--headless",
                "--html",
                str(reports / "report.html"),
                "--csv",
                str(reports / "locust"),
                "--only-summary",
                "--json-file",
                str(reports / "final"),
                *os.environ.get("LOADTEST_USER_CLASSES", "").split(),
            ],
            env={**os.environ, "SLINGSHOT_SEED_FILE": str(seed_file)},
            cwd=REPO,
        )
        requests, failed, all_failures = final_counts(reports / "final.json")
        wait_for_import(timeout=float(os.environ.get("LOADTEST_DRAIN_TIMEOUT", "120")))
        seeded = Link.objects.filter(owner__username="loadtest", tags__contains=["seeded"])
        stored = Click.objects.filter(link__in=seeded, occurred_at__gte=started).count()
        redirected = requests - failed
        print(summary(reports / "final.json"))
        print(
            f"locust: {requests} redirects ({failed} failed), {all_failures} failed requests in all; "
            f"reports in {reports}"
        )
        print(f"reconciled: {stored}/{redirected} clicks")
        ok = stored == redirected and all_failures == 0 and locust.returncode == 0 and redirected > 0
        if not ok:
            print(
                "load test FAILED: "
                + ("clicks do not match redirects" if stored != redirected else "there were failed requests"),
                file=sys.stderr,
            )
        return 0 if ok else 1
    finally:
        if stack:
            os.killpg(stack.pid, signal.SIGINT)
            stack.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())

"""YOURLS API benchmark: `make bench-yourls`.

A signed YOURLS request names no token, so the dashboard looks for the
token whose signature matches among every usable one (tokens/signatures.py).
This measures what that costs as tokens grow: with --tokens usable tokens
(other people's, written straight into the table), the latency of
`action=version` over HTTP with the API token itself (one lookup by its
digest: the ceiling), with the token's signature, and with a time-limited
md5 signature, back to back, each against the token's.

Starts its own PostgreSQL and Redis (devstack.throwaway) and the dashboard
under gunicorn (one worker, so that every request pays the same).

    flock /tmp/slingshot-bench.lock .venv/bin/python loadtest/bench_yourls.py [--tokens 10000] [--requests 300]
"""

import argparse
import hashlib
import http.client
import os
import secrets
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from devstack.throwaway import ThrowawayStack  # noqa: E402

MANAGE = [sys.executable, str(REPO / "dashboard" / "manage.py")]


def median_ms(port: int, params: dict | None, *, requests: int, make=None) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times = []
    for _ in range(requests):
        query = urllib.parse.urlencode({"action": "version", "format": "json", **(make() if make else params)})
        started = time.perf_counter()
        conn.request("GET", "/yourls-api.php?" + query)
        response = conn.getresponse()
        response.read()
        times.append((time.perf_counter() - started) * 1000)
        assert response.status == 200, response.status
    conn.close()
    return sorted(times)[len(times) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()

    stack = ThrowawayStack(prefix="slingshot-bench-yourls-")
    try:
        stack.start()
        env = {**os.environ, **stack.environment(), "API_THROTTLE_RATE": "100000000/min"}
        run = lambda *cmd: subprocess.run([*MANAGE, *cmd], env=env, check=True, capture_output=True, text=True)  # noqa: E731
        run("migrate", "--no-input")
        run(
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; get_user_model().objects.create_user('bench')",
        )
        raw, signature = run("create_api_token", "bench", "--scope", "write", "--signature").stdout.split()
        import psycopg

        with psycopg.connect(env["DATABASE_URL"]) as conn:
            user_id, team_id = conn.execute(
                "SELECT user_id, team_id FROM api_apitoken WHERE prefix = %s", [raw[:10]]
            ).fetchone()
            with conn.cursor().copy(
                "COPY api_apitoken (user_id, team_id, name, prefix, digest, scope, created_at) FROM STDIN"
            ) as copy:
                for n in range(args.tokens - 1):
                    digest = hashlib.sha256(secrets.token_bytes(32)).hexdigest()
                    copy.write_row(
                        [user_id, team_id, f"bench {n}", "ssk_bench", digest, "read", "2026-01-01T00:00:00Z"]
                    )
        port = stack.start_dashboard(env, workers=1)

        def timed() -> dict:
            timestamp = str(int(time.time()))
            return {"timestamp": timestamp, "signature": hashlib.md5((timestamp + signature).encode()).hexdigest()}

        print(f"{args.tokens:,} usable tokens, {args.requests} requests each, gunicorn with 1 worker")
        median_ms(port, {"signature": raw}, requests=50)  # warm-up, unrecorded
        for _ in range(2):  # twice, back to back: timings swing
            token = median_ms(port, {"signature": raw}, requests=args.requests)
            plain = median_ms(port, {"signature": signature}, requests=args.requests)
            limited = median_ms(port, None, requests=args.requests, make=timed)
            print(
                f"median: the token {token:.2f} ms, its signature {plain:.2f} ms ({plain / token:.1f}x), "
                f"a time-limited signature {limited:.2f} ms ({limited / token:.1f}x)"
            )
        return 0
    finally:
        stack.cleanup()


if __name__ == "__main__":
    sys.exit(main())

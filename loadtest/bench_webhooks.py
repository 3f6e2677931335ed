"""Webhooks benchmark: `make bench-webhooks`.

Two figures (docs/benchmarks.md, "Webhooks"):

1. What a `link.clicked` webhook costs the click importer: batches of
   2,500 clicks of one busy link stored by the importer's own store step,
   in rounds that alternate the link's team without and with an enabled
   webhook that wants its clicks; clicks stored a second each way, and the
   ratio (the target: at least 0.90).
2. How fast the deliverer sends click events: the messages of those
   clicks made from their ClickBatch rows (make_click_messages), then sent
   by `manage.py deliver_webhooks --once` (its defaults: at most
   WEBHOOKS_PER_WEBHOOK at once to the webhook) to a local receiver, an
   nginx answering 204; events a second (the target: at least 2,000).

Starts its own PostgreSQL and Redis (devstack.throwaway) and the receiver;
runs the importer and the deliverer in this process.

    flock /tmp/slingshot-bench.lock .venv/bin/python loadtest/bench_webhooks.py [--clicks 200000] [--rounds 4] [--smoke]
"""

import argparse
import io
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from devstack.net import free_port, wait_for_port  # noqa: E402
from devstack.throwaway import ThrowawayStack  # noqa: E402

if TYPE_CHECKING:
    from clicks.importer import ClickImporter
    from links.models import Link
    from webhooks.models import Webhook

BATCH = 2500
PER_ENTRY = 250
RECEIVER_CONF = """
worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{}}
http {{
    access_log off;
    client_body_buffer_size 64k;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 204; }}
    }}
}}
"""


def start_receiver(root: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    (root / "receiver.conf").write_text(RECEIVER_CONF.format(root=root, port=port))
    process = subprocess.Popen(["nginx", "-p", str(root), "-c", str(root / "receiver.conf")], stderr=subprocess.DEVNULL)
    wait_for_port(port, process=process)
    return process, port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=200_000, help="clicks stored each way in all")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--smoke", action="store_true", help="a few thousand clicks: that the script works (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.clicks, args.rounds = 10_000, 2

    stack = ThrowawayStack(prefix="slingshot-bench-webhooks-")
    receiver = None
    try:
        stack.start()
        os.environ.update(
            stack.environment(),
            DJANGO_SETTINGS_MODULE="slingshot.settings",
            WEBHOOKS_ALLOW_HTTP="true",
            WEBHOOKS_ALLOW_PRIVATE="true",
        )
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", "--no-input", verbosity=0)
        receiver, port = start_receiver(stack.root)
        return run(args, port)
    finally:
        if receiver is not None:
            receiver.terminate()
        stack.cleanup()


@dataclass
class Importing:
    """One busy link, its team's link.clicked webhook, and the importer that stores its clicks."""

    link: "Link"
    webhook: "Webhook"
    store: "ClickImporter"
    per_round: int

    def batches(self, count: int) -> list:
        """`count` clicks of the link, made into the importer's batches of BATCH clicks."""
        from testing.streams import entry

        now = int(datetime.now(UTC).timestamp() * 1000)
        clicks = [
            {
                "ts": now,
                "slug": self.link.slug,
                "link": self.link.pk,
                "ip": f"198.51.{i % 250}.{i % 200}",
                "ua": "bench",
                "ref": "",
            }
            for i in range(PER_ENTRY)
        ]
        entries = [entry(clicks) for _ in range(count // PER_ENTRY)]
        return [
            self.store.maker.make(entries[i : i + BATCH // PER_ENTRY])
            for i in range(0, len(entries), BATCH // PER_ENTRY)
        ]

    def timed(self, enabled: bool) -> float:
        """Clicks stored a second in a round of per_round clicks, the webhook enabled or not."""
        from webhooks.models import Webhook

        Webhook.objects.filter(pk=self.webhook.pk).update(enabled=enabled)
        made = self.batches(self.per_round)
        started = time.perf_counter()
        stored = sum(self.store.store(batch) for batch in made)
        took = time.perf_counter() - started
        assert stored == self.per_round, (stored, self.per_round)
        return self.per_round / took


def make_importing(args: argparse.Namespace, port: int) -> Importing:
    """A user, their link and a link.clicked webhook to the receiver, and an importer."""
    from teams.services import personal_team
    from testing.factories import make_link, make_user
    from testing.streams import importer
    from webhooks import services

    owner = make_user()
    link = make_link(owner=owner, url="https://example.org/landing")
    webhook, _ = services.webhook_create(
        actor=owner, team=personal_team(owner), url=f"http://127.0.0.1:{port}/hook", events=["link.clicked"]
    )
    store = importer("bench-webhooks")
    per_round = max(BATCH, args.clicks // args.rounds // BATCH * BATCH)
    return Importing(link, webhook, store, per_round)


def measure_importer(importing: Importing, rounds: int) -> None:
    """Alternates rounds without and with the webhook after a warm-up, and prints clicks a second each way."""
    importing.timed(False)  # warm-up: partitions, caches
    without, with_hook = [], []
    for _ in range(rounds):
        without.append(importing.timed(False))
        with_hook.append(importing.timed(True))
    ratios = [w / wo for w, wo in zip(with_hook, without, strict=True)]
    print(f"importer, {importing.per_round:,} clicks a round, {rounds} rounds, alternating")
    print(f"  without a webhook: {median(without):,.0f} clicks/s (rounds: {', '.join(f'{r:,.0f}' for r in without)})")
    print(
        f"  with link.clicked: {median(with_hook):,.0f} clicks/s (rounds: {', '.join(f'{r:,.0f}' for r in with_hook)})"
    )
    print(f"  importer with a webhook / without: {median(ratios):.2f} (target >= 0.90)")


def measure_messages(expected: int) -> int:
    """Makes the messages of every ClickBatch row, checks there are `expected`, and prints how fast."""
    from django.db import connection

    from webhooks.clicks import make_click_messages

    started = time.perf_counter()
    made = 0
    while True:
        step = make_click_messages(limit=50)
        if not step:
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM webhooks_clickbatch")
                if not cursor.fetchone()[0]:
                    break
        made += step
    took = time.perf_counter() - started
    assert made == expected, (made, expected)
    print(f"messages made: {made:,} in {took:.1f} s, {made / took:,.0f} a second")
    return made


def measure_deliverer(webhook: "Webhook", sent: int) -> None:
    """Sends every message with deliver_webhooks --once, checks all `sent` were delivered, and prints how fast."""
    from django.core.management import call_command
    from django.db import connection

    from webhooks.models import Webhook

    Webhook.objects.filter(pk=webhook.pk).update(enabled=True)
    started, cpu = time.perf_counter(), time.process_time()
    call_command("deliver_webhooks", once=True, stdout=io.StringIO())
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    with connection.cursor() as cursor:
        cursor.execute("SELECT state, count(*) FROM webhooks_message GROUP BY state")
        states = dict(cursor.fetchall())
    assert states == {"delivered": sent}, states
    print(
        f"deliverer: {sent:,} click events in {took:.1f} s, {sent / took:,.0f} events/s (target >= 2,000), "
        f"{cpu / sent * 1e6:,.0f} us of its CPU an event; every one delivered, 204"
    )


def run(args: argparse.Namespace, port: int) -> int:
    """Times the importer without and with the webhook, then the messages made and their delivery to `port`."""
    importing = make_importing(args, port)
    measure_importer(importing, args.rounds)
    made = measure_messages(importing.per_round * args.rounds)
    measure_deliverer(importing.webhook, made)
    return 0


if __name__ == "__main__":
    sys.exit(main())

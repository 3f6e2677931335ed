"""Screening benchmark: `make bench-screen` (docs/benchmarks.md, "Screening").

Three figures, each with the target of issue 50:

1. Reading a blocklist of 1,000,000 domains (a hosts file, the longest
   lines of the formats) as `manage.py screen_lists` reads it: parsed
   into hashes and packed (screening/formats.py, screening/screen.py), in
   a process of its own; seconds (target: under 5) and how much the
   process grew at its peak (target: under 100 MB).
2. What the list then takes in each process that looks it up (8 bytes a
   domain), and how long it takes to load from what PostgreSQL holds.
3. What screening adds to a link's creation: a lookup of a destination's
   host, each domain above it and its URL, over that list, a URL list of
   100,000 and an allowlist; microseconds a link (target: at most 1 ms),
   and a bulk of 10,000 destinations, all in one go.

Runs without a stack: the parts are pure Python over bytes.

    flock /tmp/slingshot-bench.lock .venv/bin/python loadtest/bench_screen.py [--domains 1000000] [--smoke]
"""

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

if TYPE_CHECKING:
    from screening.screen import Screen

LOOKUPS = 10_000


def rss_kb(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def read_list(path: str) -> dict:
    """In a process of its own: the list read as the refresher reads it
    (screening.services.refresh, but for storing it)."""
    from screening.formats import lines_of, parse, sha256_of

    before = rss_kb()
    started = time.perf_counter()
    with open(path, "rb") as stream:
        sha256_of(stream)
        parsed = parse(lines_of(stream))
    domains = parsed.domains.packed()
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "grew_mb": (rss_kb("VmHWM") - before) / 1024, "domains": len(domains) // 8}


def write_lists(folder: Path, domains: int, urls: int, rng: random.Random) -> tuple[Path, Path, list[str]]:
    names = [
        f"{rng.getrandbits(40):010x}-{n}.{rng.choice(['com', 'net', 'xyz', 'top', 'example'])}" for n in range(domains)
    ]
    hosts = folder / "hosts"
    with hosts.open("w") as f:
        f.write(f"# a hosts file of {domains} domains\n127.0.0.1 localhost\n")
        for name in names:
            f.write(f"0.0.0.0 {name}\n")
    url_list = folder / "urls.txt"
    with url_list.open("w") as f:
        for n in range(urls):
            f.write(f"http://{names[n % len(names)]}/payload-{n}.exe\n")
    return hosts, url_list, names


def parse_args() -> argparse.Namespace:
    """The command line, shrunk to a tiny run under --smoke."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", type=int, default=1_000_000)
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="A tiny run: that the script works.")
    parser.add_argument("--read-list", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.domains, args.urls, args.rounds = 20_000, 2_000, 1
    return args


def time_reading(hosts: Path, args: argparse.Namespace) -> None:
    """Reads the hosts file --rounds times, each in a fresh process, and prints the median time and growth."""
    reads = []
    for _ in range(args.rounds):
        done = subprocess.run(
            [sys.executable, __file__, "--read-list", str(hosts)], capture_output=True, text=True, check=True
        )
        reads.append(json.loads(done.stdout))
    assert all(read["domains"] == args.domains for read in reads), reads
    seconds = median(read["seconds"] for read in reads)
    grew = median(read["grew_mb"] for read in reads)
    print(
        f"read and packed: {seconds:.2f} s (target < 5 s), the process grew {grew:.0f} MB at its peak"
        f" (target < 100 MB); rounds: " + ", ".join(f"{r['seconds']:.2f} s / {r['grew_mb']:.0f} MB" for r in reads)
    )


def load_screen(hosts: Path, url_list: Path, names: list[str]) -> "Screen":
    """The screen of both lists and an allowlist of 100 of the names; prints what it holds and its load time."""
    from screening.formats import digest, parse
    from screening.screen import Loaded, Screen

    domains_bytes = parse(hosts.open()).domains.packed()
    urls_bytes = parse(url_list.open()).urls.packed()
    started = time.perf_counter()
    block_domains, block_urls = array("Q"), array("Q")
    block_domains.frombytes(domains_bytes)
    block_urls.frombytes(urls_bytes)
    loaded_ms = (time.perf_counter() - started) * 1000
    allow = array("Q", sorted(digest(name) for name in names[:100]))
    screen = Screen(
        [
            Loaded("hosts", False, block_domains, array("Q")),
            Loaded("urls", False, array("Q"), block_urls),
            Loaded("allow", True, allow, array("Q")),
        ]
    )
    print(
        f"held in each process: {(len(domains_bytes) + len(urls_bytes)) / 2**20:.1f} MB, loaded in {loaded_ms:.1f} ms"
    )
    return screen


def lookup_targets(names: list[str], urls: int, rng: random.Random) -> list[tuple[str, str]]:
    """LOOKUPS destinations (host, URL): a quarter under listed domains, a quarter listed URLs, half not listed."""
    targets = []
    for n in range(LOOKUPS):
        kind = n % 4
        if kind == 0:  # listed: a subdomain of a listed domain
            host = "www." + names[rng.randrange(100, len(names))]
        elif kind == 1:  # a URL of the URL list
            host = names[n % urls % len(names)]
            targets.append((host, f"http://{host}/payload-{n % urls}.exe"))
            continue
        else:  # not listed
            host = f"shop{n}.brand-{rng.getrandbits(32):x}.co.uk"
        targets.append((host, f"https://{host}/spring-sale?ref=newsletter&n={n}"))
    return targets


def time_lookups(screen: "Screen", targets: list[tuple[str, str]], rounds: int) -> None:
    """Screens every target, at least 3 rounds, and prints the median per link and for the bulk."""
    listed = sum(1 for host, url in targets if screen.listing(host, url))
    timings = []
    for _ in range(max(3, rounds)):
        started = time.perf_counter()
        for host, url in targets:
            screen.listing(host, url)
        timings.append(time.perf_counter() - started)
    bulk = median(timings)
    print(
        f"a link's lookup: {bulk / LOOKUPS * 1e6:.1f} µs (target <= 1000 µs); a bulk of {LOOKUPS:,}"
        f" destinations screened in {bulk * 1000:.0f} ms ({listed:,} listed)"
    )


def main() -> None:
    args = parse_args()
    if args.read_list:
        print(json.dumps(read_list(args.read_list)))
        return
    rng = random.Random(50)
    with tempfile.TemporaryDirectory(prefix="slingshot-bench-screen-") as tmp:
        hosts, url_list, names = write_lists(Path(tmp), args.domains, args.urls, rng)
        size_mb = hosts.stat().st_size / 2**20
        print(f"list: {args.domains:,} domains, a hosts file of {size_mb:.1f} MB; a URL list of {args.urls:,}")
        time_reading(hosts, args)
        screen = load_screen(hosts, url_list, names)
        time_lookups(screen, lookup_targets(names, args.urls, rng), args.rounds)


if __name__ == "__main__":
    main()

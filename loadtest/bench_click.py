"""What a click's parts cost an nginx worker, steadier than `make bench`.

`make bench` measures a whole request under wrk, and on a shared 2-core
machine a round's CPU a request swings by more than a click costs. This
measures the click's parts one by one, each in a loop inside one request
of an nginx running the checkout's own nginx.conf and edge/, by the
worker's CPU (loadtest/bench_click.lua):

  read    what a click records of the request, as the checkout reads it:
          the request's method and its three variables where nginx keeps
          them (clicks.lua), or in an older checkout nginx's map that
          joined them (copied with `volatile`, so that it is made again at
          each read, as a request makes it once)
  add     the journal's add of those details, into its ring in the click
          memory folder (an older checkout's: into the file's pages,
          faulted in as it grows), as a request's click does
  copy    the timer's copy of the ring into the journal's file, a flush's
          worth at a time (none in an older checkout)
  unsent  the timer's read of what the journal holds, entry by entry, a
          flush's worth at a time

The request carries wrk's headers in `make bench` (loadtest/bench_edge.wrk.lua).
`--base DIR` measures another checkout (a git worktree) in the same rounds,
alternating; medians over `--rounds`.
"""

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import devstack  # noqa: E402
from devstack.edge import edge_command, render_edge_conf
from devstack.net import free_port, wait_for_port

HERE = Path(__file__).resolve().parent
HEADERS = {
    "User-Agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36",
    "Referer": "https://news.example.org/2026/11/spring-sale-roundup?utm_source=newsletter",
}
PARTS = ("read", "add", "copy", "unsent")
# An older checkout's nginx.conf joined a click's details in this map.
CLICK_MAP = re.compile(r"\n    map \$request_method \$slingshot_(?:click|visitor) \{.*?\n    \}\n", re.S)


class Edge:
    """One nginx worker on `repo`'s nginx.conf, with a server of its own on
    another port whose one location runs bench_click.lua."""

    def __init__(self, root: Path, repo: Path) -> None:
        prefix = root / f"nginx-{len(list(root.glob('nginx-*')))}"
        conf_path = render_edge_conf(prefix, free_port(), repo=repo)
        conf = conf_path.read_text()
        joined = CLICK_MAP.search(conf)
        volatile = "" if joined is None else joined.group(0).lstrip("\n")
        volatile = re.sub(
            r"\$slingshot_\w+ \{\n", "$slingshot_click_volatile {\n        volatile;\n", volatile, count=1
        )
        self.port = free_port()
        shutil.copy(HERE / "bench_click.lua", prefix / "bench_click.lua")
        # The worker's user (nginx's master runs as root here) writes its journal there.
        (prefix / "costs-spool").mkdir(mode=0o777)
        (prefix / "costs-spool").chmod(0o777)
        server = (
            volatile
            + "    server {\n"
            + f"        listen 127.0.0.1:{self.port};\n"
            + "        location = /costs { content_by_lua_file bench_click.lua; }\n"
            + "    }\n"
        )
        end = conf.rstrip().rfind("}")
        conf_path.write_text(conf[:end] + server + conf[end:])
        self.process = subprocess.Popen(
            edge_command(prefix, workers=1),
            stdout=open(prefix / "stderr.log", "ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_port(self.port, process=self.process)

    def measure(self, clicks: int) -> dict[str, tuple[float, int]]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/costs?n={clicks}", headers=HEADERS)
        with urllib.request.urlopen(request, timeout=300) as response:
            lines = response.read().decode().split("\n")
        return {name: (float(ns), int(size)) for name, ns, size in (line.split() for line in lines if line)}

    def stop(self) -> None:
        # nginx's graceful stop: its worker leaves its journal in its file
        # alone, and no ring of it in the click memory folder.
        self.process.send_signal(signal.SIGQUIT)
        self.process.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=1_000_000, help="clicks a loop (default 1,000,000)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", type=Path, metavar="DIR", help="another checkout, measured in the same rounds")
    parser.add_argument("--smoke", action="store_true", help="one round of 20,000 clicks: that it works (make test)")
    args = parser.parse_args()
    if args.smoke:
        args.clicks, args.rounds = 20_000, 1
    checkouts = {"this": devstack.REPO}
    if args.base:
        checkouts["base"] = args.base
    root = Path(tempfile.mkdtemp(prefix="slingshot-bench-click-"))
    root.chmod(0o755)  # nginx's workers read bench_click.lua in it
    edges = {}
    try:
        edges = {name: Edge(root, repo) for name, repo in checkouts.items()}
        runs: dict[str, list[dict[str, tuple[float, int]]]] = {name: [] for name in edges}
        for number in range(1, args.rounds + 1):
            for name, edge in edges.items():
                result = edge.measure(args.clicks)
                runs[name].append(result)
                print(
                    f"round {number} {name}: "
                    + ", ".join(f"{part} {result[part][0]:.1f} ns" for part in PARTS)
                    + f" ({result['read'][1]} bytes of details, {result['add'][1]} a record)"
                )
        print(f"\nns of the worker's CPU a click, medians over {args.rounds} rounds of {args.clicks:,} clicks")
        print(f"{'checkout':<10}" + "".join(f"{part:>9}" for part in PARTS) + f"{'all':>9}")
        for name, results in runs.items():
            parts = [median(result[part][0] for result in results) for part in PARTS]
            print(f"{name:<10}" + "".join(f"{value:>9.1f}" for value in parts) + f"{sum(parts):>9.1f}")
    finally:
        for edge in edges.values():
            edge.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

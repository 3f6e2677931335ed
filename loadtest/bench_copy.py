"""`make bench-copy`: what a stored click costs PostgreSQL, part by part.

What COPY's text format, fewer indexes on the click partitions, or rows
grouped by link would change in the importer's COPY into `clicks`. It
starts a durable PostgreSQL (as `make run` has it: fsync and synchronous
commit on, PostgreSQL's own defaults otherwise) and Redis, migrates,
preloads clicks as the edge writes them (edge_stream.preload: 2,000
links, ~600 user agents, 66,000 addresses), makes them into the
importer's own batches (BatchMaker, enriched) of the size a live importer
takes at ~65,000 clicks a second (160 entries, 16,000 clicks), and then
COPYs the same batches into `clicks` in turn:

  stored     the table as it is: the primary key (click_id, occurred_at),
             the link-and-time index, and the imported clicks' partial
             index; the importer's own binary COPY rows (entries.pyx)
  grouped    as stored, each batch's rows grouped by link (in the order
             each link first comes, its clicks in their own order),
             written by psycopg's write_row
  no-link    without clicks_link_time
  no-pkey    without the primary key
  text       as stored, in COPY's text format (psycopg's write_row), as
             the importer wrote its rows before

one transaction a batch, each variant on an emptied table after a
CHECKPOINT, in rounds. For each it prints the CPU the backend spent a
click (from /proc), the WAL written a click, and the CPU this process spent
in COPY a click (the rows are read back into Python values first, not
timed). Changes nothing in the repo's schema: an index dropped for a
variant is made again before the next.

    .venv/bin/python loadtest/bench_copy.py [--clicks 320000] [--rounds 3] [--smoke]
"""

import argparse
import os
import sys
import time
from pathlib import Path
from statistics import median
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from edge_stream import preload  # noqa: E402
from procstat import cpu_seconds  # noqa: E402

from clicks.copy_rows import CLICK_TYPES, binary_rows  # noqa: E402
from devstack.throwaway import ThrowawayStack  # noqa: E402

BATCH_ENTRIES = 160
VARIANTS = ("stored", "grouped", "no-link", "no-pkey", "text")
BINARY = " (FORMAT BINARY)"
DROP = {
    "no-link": ("DROP INDEX clicks_link_time", "CREATE INDEX clicks_link_time ON clicks (link_id, occurred_at)"),
    "no-pkey": (
        "ALTER TABLE clicks DROP CONSTRAINT clicks_pkey",
        "ALTER TABLE clicks ADD PRIMARY KEY (click_id, occurred_at)",
    ),
}
WAL_SINCE = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)"


def group_by_link(rows: list[tuple], link_at: int) -> list[tuple]:
    """Rows grouped by link, in the order each link first comes."""
    by_link: dict[int, list[tuple]] = {}
    for row in rows:
        by_link.setdefault(row[link_at], []).append(row)
    return [row for group in by_link.values() for row in group]


def copy_sql(columns: tuple[str, ...], options: str = "") -> str:
    return f"COPY clicks ({', '.join(columns)}) FROM STDIN{options}"


def copy_rows(cursor, columns: tuple[str, ...], rows: list[tuple], options: str) -> None:
    """The rows through psycopg's write_row, in COPY's binary or text format."""
    with cursor.copy(copy_sql(columns, options)) as copy:
        if options:
            copy.set_types([CLICK_TYPES[column] for column in columns])
        for row in rows:
            copy.write_row(row)


class Batches(NamedTuple):
    """The same clicks in each form a variant COPYs."""

    made: list  # BatchMaker's batches, each with the importer's binary COPY rows
    parsed: list[list[tuple]]  # those rows read back into Python values
    grouped: list[list[tuple]]  # the same, grouped by link
    columns: tuple[str, ...]
    clicks: int


def make_batches(clicks: int) -> Batches:
    """Preloads `clicks` clicks as the edge writes them and makes them into the importer's batches."""
    from clicks.batch import BatchMaker
    from clicks.enrichment import Enricher
    from slingshot.redis import get_redis

    client = get_redis()
    stream = "bench-copy"
    preload(
        client,
        clicks=clicks,
        links=[(f"bench{i}", i + 1) for i in range(2000)],
        seed=1,
        stream=stream,
        spread_ms=600_000,
    )
    entries = [(entry_id, fields) for entry_id, fields in client.xrange(stream)]
    maker = BatchMaker(Enricher(enabled=True))
    batches = [maker.make(entries[i : i + BATCH_ENTRIES]) for i in range(0, len(entries), BATCH_ENTRIES)]
    columns = batches[0].click_columns
    parsed = [binary_rows(batch.click_rows, columns) for batch in batches]
    grouped = [group_by_link(rows, columns.index("link_id")) for rows in parsed]
    return Batches(batches, parsed, grouped, columns, sum(batch.clicks for batch in batches))


def copy_variant(conn, admin, pid: int, variant: str, batches: Batches) -> tuple[float, float, float] | None:
    """One round of a variant on an emptied table: PostgreSQL's CPU µs, WAL bytes and
    this process's CPU µs in COPY, a click; None if the table does not hold every click."""
    drop, make = DROP.get(variant, (None, None))
    columns, clicks = batches.columns, batches.clicks
    with conn.transaction():
        conn.execute("TRUNCATE clicks")
        if drop:
            conn.execute(drop)
    admin.execute("CHECKPOINT")
    wal_before = admin.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
    cpu_before, own_before = cpu_seconds([pid]), time.process_time()
    for batch, rows, grouped_rows in zip(batches.made, batches.parsed, batches.grouped, strict=True):
        with conn.transaction(), conn.cursor() as cursor:
            if variant == "text":
                copy_rows(cursor, columns, rows, "")
            elif variant == "grouped":
                copy_rows(cursor, columns, grouped_rows, BINARY)
            else:
                with cursor.copy(copy_sql(columns, BINARY)) as copy:
                    copy.write(batch.click_rows)
    cpu, own = cpu_seconds([pid]) - cpu_before, time.process_time() - own_before
    wal = float(admin.execute(WAL_SINCE, [wal_before]).fetchone()[0])
    stored = conn.execute("SELECT count(*) FROM clicks").fetchone()[0]
    conn.commit()
    if stored != clicks:
        print(f"FAILED: {variant} stored {stored} of {clicks}", file=sys.stderr)
        return None
    if make:
        with conn.transaction():
            conn.execute(make)
    return cpu / clicks * 1e6, wal / clicks, own / clicks * 1e6


def print_medians(results: dict[str, list[tuple[float, float, float]]]) -> None:
    """Each variant's medians over the rounds, its PostgreSQL CPU also against stored's."""
    base = median(r[0] for r in results["stored"])
    print("\nmedians: variant, PostgreSQL µs a click (and against stored), WAL bytes a click, COPY's client µs a click")
    for variant, rows in results.items():
        pg, wal, own = (median(row[i] for row in rows) for i in range(3))
        ratio = pg / base if base else float("nan")  # a smoke's few clicks may take no clock tick
        print(f"  {variant:8} {pg:5.2f} ({ratio:.2f})  {wal:4.0f}  {own:5.2f}")


def run(args, stack: ThrowawayStack) -> int:
    """Migrates, makes the batches, COPYs them in rounds of every variant, and prints the medians."""
    import django

    django.setup()
    import psycopg
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    batches = make_batches(args.clicks)
    print(
        f"bench-copy: {batches.clicks:,} clicks (orphan visits left out) in {len(batches.made)} batches of "
        f"{BATCH_ENTRIES} entries; PostgreSQL durable, its own defaults; {args.rounds} rounds of {', '.join(VARIANTS)}",
        flush=True,
    )
    results: dict[str, list[tuple[float, float, float]]] = {variant: [] for variant in VARIANTS}
    with (
        psycopg.connect(os.environ["DATABASE_URL"]) as conn,
        psycopg.connect(
            host=str(stack.pg_dir), port=stack.pg_port, user="postgres", dbname="slingshot", autocommit=True
        ) as admin,
    ):
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        conn.commit()
        for number in range(1, args.rounds + 1):
            for variant in VARIANTS:
                result = copy_variant(conn, admin, pid, variant, batches)
                if result is None:
                    return 1
                results[variant].append(result)
                pg, wal, own = result
                print(
                    f"  round {number} {variant:8} PostgreSQL {pg:5.2f} µs a click, "
                    f"WAL {wal:4.0f} bytes a click; this process in COPY {own:5.2f} µs",
                    flush=True,
                )
    print_medians(results)
    print("OK")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=320_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="3,200 clicks, one round: that the script works")
    args = parser.parse_args()
    if args.smoke:
        args.clicks, args.rounds = 3_200, 1
    stack = ThrowawayStack(prefix="slingshot-bench-copy-", durable=True)
    try:
        stack.start()
        os.environ.update(
            {**stack.environment(), "DJANGO_SETTINGS_MODULE": "slingshot.settings", "LOG_LEVEL": "WARNING"}
        )
        return run(args, stack)
    finally:
        stack.cleanup()


if __name__ == "__main__":
    sys.exit(main())

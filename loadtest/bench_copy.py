"""`make bench-copy`: what a stored click costs PostgreSQL, part by part.

What binary COPY, fewer indexes on the click partitions, or rows grouped
by link would save the importer's COPY into `clicks`. It starts a durable
PostgreSQL (as `make run` has it: fsync and synchronous commit on,
PostgreSQL's own defaults otherwise) and Redis, migrates, preloads clicks
as the edge writes them (bench_import.preload: 2,000 links, ~600 user
agents, 66,000 addresses), makes them into the importer's own batches (BatchMaker, enriched) of the
size a live importer takes at ~65,000 clicks a second (160 entries, 16,000
clicks), and then COPYs the same batches into `clicks` in turn:

  stored     the table as it is: the primary key (click_id, occurred_at),
             the link-and-time index, and the imported clicks' partial index
  grouped    as stored, each batch's rows grouped by link (in the order
             each link first comes, its clicks in their own order)
  no-link    without clicks_link_time
  no-pkey    without the primary key
  binary     as stored, with COPY's binary format (psycopg's write_row, the
             types set), the rows parsed back from the text into Python
             values first (not timed)

one transaction a batch, each variant on an emptied table after a
CHECKPOINT, in rounds. For each it prints the CPU the backend spent a
click (from /proc), the WAL written a click, and the CPU this process spent
in COPY a click. Changes nothing in the repo's schema: an index dropped
for a variant is made again before the next.

    .venv/bin/python loadtest/bench_copy.py [--clicks 320000] [--rounds 3] [--smoke]
"""

import argparse
import ipaddress
import os
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "dashboard")]

from bench_import import preload  # noqa: E402
from procstat import cpu_seconds  # noqa: E402

from devstack.throwaway import ThrowawayStack  # noqa: E402

BATCH_ENTRIES = 160
VARIANTS = ("stored", "grouped", "no-link", "no-pkey", "binary")
DROP = {
    "no-link": ("DROP INDEX clicks_link_time", "CREATE INDEX clicks_link_time ON clicks (link_id, occurred_at)"),
    "no-pkey": (
        "ALTER TABLE clicks DROP CONSTRAINT clicks_pkey",
        "ALTER TABLE clicks ADD PRIMARY KEY (click_id, occurred_at)",
    ),
}
WAL_SINCE = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)"
TYPES = {
    "click_id": "uuid",
    "occurred_at": "timestamptz",
    "slug": "text",
    "link_id": "int8",
    "ip": "inet",
    "country": "text",
    "user_agent_id": "int8",
    "browser": "text",
    "os": "text",
    "device": "text",
    "is_bot": "bool",
    "referer": "text",
    "referer_host": "text",
    "rule": "text",
}


def unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape")


def parse_rows(columns: tuple[str, ...], text: bytes) -> list[tuple]:
    """COPY text back into Python values, for the binary variant."""
    convert = {
        "uuid": uuid.UUID,
        "timestamptz": lambda v: datetime.fromisoformat(v + ":00" if v[-3] in "+-" else v),
        "int8": int,
        "inet": ipaddress.ip_address,
        "bool": lambda v: v == "t",
        "text": unescape,
    }
    converters = [convert[TYPES[column]] for column in columns]
    rows = []
    for line in text.decode().split("\n")[:-1]:  # not splitlines: U+2028 and the like are text in COPY
        rows.append(
            tuple(
                None if value == "\\N" else conv(value)
                for conv, value in zip(converters, line.split("\t"), strict=True)
            )
        )
    return rows


def group_by_link(text: bytes, link_at: int) -> bytes:
    """COPY text's lines grouped by link, in the order each link first comes."""
    by_link: dict[bytes, list[bytes]] = {}
    for line in text.splitlines(keepends=True):
        by_link.setdefault(line.split(b"\t", link_at + 1)[link_at], []).append(line)
    return b"".join(b"".join(lines) for lines in by_link.values())


def copy_sql(columns: tuple[str, ...], options: str = "") -> str:
    return f"COPY clicks ({', '.join(columns)}) FROM STDIN{options}"


def copy_binary(cursor, columns: tuple[str, ...], rows: list[tuple]) -> None:
    with cursor.copy(copy_sql(columns, " (FORMAT BINARY)")) as copy:
        copy.set_types([TYPES[column] for column in columns])
        for row in rows:
            copy.write_row(row)


def run(args, stack: ThrowawayStack) -> int:
    import django

    django.setup()
    import psycopg
    from django.core.management import call_command

    from clicks.batch import BatchMaker
    from clicks.enrichment import Enricher
    from slingshot.redis import get_redis

    call_command("migrate", verbosity=0)
    client = get_redis()
    stream = "bench-copy"
    preload(
        client,
        clicks=args.clicks,
        links=[(f"bench{i}", i + 1) for i in range(2000)],
        seed=1,
        stream=stream,
        spread_ms=600_000,
    )
    entries = [(entry_id, fields) for entry_id, fields in client.xrange(stream)]
    maker = BatchMaker(Enricher(enabled=True))
    batches = [maker.make(entries[i : i + BATCH_ENTRIES]) for i in range(0, len(entries), BATCH_ENTRIES)]
    clicks = sum(batch.clicks for batch in batches)
    columns = batches[0].click_columns
    parsed = [parse_rows(columns, batch.click_rows) for batch in batches]
    grouped = [group_by_link(batch.click_rows, columns.index("link_id")) for batch in batches]
    print(
        f"bench-copy: {clicks:,} clicks (orphan visits left out) in {len(batches)} batches of {BATCH_ENTRIES} "
        f"entries; PostgreSQL durable, its own defaults; {args.rounds} rounds of {', '.join(VARIANTS)}",
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
                drop, make = DROP.get(variant, (None, None))
                with conn.transaction():
                    conn.execute("TRUNCATE clicks")
                    if drop:
                        conn.execute(drop)
                admin.execute("CHECKPOINT")
                wal_before = admin.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
                cpu_before, own_before = cpu_seconds([pid]), time.process_time()
                for batch, rows, grouped_rows in zip(batches, parsed, grouped, strict=True):
                    with conn.transaction(), conn.cursor() as cursor:
                        if variant == "binary":
                            copy_binary(cursor, columns, rows)
                        else:
                            with cursor.copy(copy_sql(columns)) as copy:
                                copy.write(grouped_rows if variant == "grouped" else batch.click_rows)
                cpu, own = cpu_seconds([pid]) - cpu_before, time.process_time() - own_before
                wal = float(admin.execute(WAL_SINCE, [wal_before]).fetchone()[0])
                stored = conn.execute("SELECT count(*) FROM clicks").fetchone()[0]
                conn.commit()
                if stored != clicks:
                    print(f"FAILED: {variant} stored {stored} of {clicks}", file=sys.stderr)
                    return 1
                if make:
                    with conn.transaction():
                        conn.execute(make)
                results[variant].append((cpu / clicks * 1e6, wal / clicks, own / clicks * 1e6))
                print(
                    f"  round {number} {variant:8} PostgreSQL {cpu / clicks * 1e6:5.2f} µs a click, "
                    f"WAL {wal / clicks:4.0f} bytes a click; this process in COPY {own / clicks * 1e6:5.2f} µs",
                    flush=True,
                )
    base = median(r[0] for r in results["stored"])
    print("\nmedians: variant, PostgreSQL µs a click (and against stored), WAL bytes a click, COPY's client µs a click")
    for variant, rows in results.items():
        pg, wal, own = (median(row[i] for row in rows) for i in range(3))
        ratio = pg / base if base else float("nan")  # a smoke's few clicks may take no clock tick
        print(f"  {variant:8} {pg:5.2f} ({ratio:.2f})  {wal:4.0f}  {own:5.2f}")
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

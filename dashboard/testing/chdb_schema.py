"""The click store's ClickHouse schema (sql/clickhouse/) in the current
engine, in-process with chdb, so that what a current ClickHouse refuses is
caught where the tests' cluster is Debian's 18.16
(clicks/tests/test_clickhouse_schema.py runs this in a process of its own:
chdb's engine is one per process, with one configuration).

Run as `python -m testing.chdb_schema FOLDER` from dashboard/: it prints a
JSON object: `version` of the engine, `tables` made from the files with
each Replicated engine replaced by its plain one (chdb has no ZooKeeper to
replicate through; the arguments are the same), and `rollup` and `orphans`:
a sample insert's hourly rollup and its orphan visits, read back; `loose`
the columns of an AggregatingMergeTree outside its sort key that are no
aggregate state (none should be)."""

import json
import re
import sys
from pathlib import Path

from clicks.clickhouse_schema import migrations

CLUSTER = "slingshot"
CONFIG = f"""<clickhouse>
    <macros><shard>1</shard><replica>r1</replica></macros>
    <remote_servers><{CLUSTER}><shard><internal_replication>true</internal_replication>
        <replica><host>127.0.0.1</host><port>9</port></replica></shard></{CLUSTER}></remote_servers>
</clickhouse>
"""
REPLICATED = re.compile(r"Replicated(\w*MergeTree)\('[^']*',\s*'[^']*'\)")
SAMPLE_CLICKS = """INSERT INTO clicks_local
    (click_id, occurred_at, occurred_ms, link_id, user_agent_id, is_bot, slug, ip, country, browser, os,
     device, referer, referer_host, rule, import_id, visitor_hash)
SELECT generateUUIDv4(), toDateTime('2026-11-29 14:00:00', 'UTC') + number, number % 1000, 1 + number % 2, 7,
       number % 5 = 0, 's', NULL, 'NL', 'Firefox', 'Linux', 'desktop', '', '', NULL, NULL, number % 3
FROM numbers(20)"""
ROLLUP = """SELECT link_id, toString(bucket), is_bot, countMerge(clicks), uniqCombinedMerge(visitors)
FROM click_rollup_hour_local GROUP BY link_id, bucket, is_bot ORDER BY link_id, bucket, is_bot"""
# Columns of an AggregatingMergeTree neither in its sort key nor an aggregate
# state: what such a table would keep of them is any one row's value.
LOOSE = """SELECT c.table, c.name FROM system.columns AS c INNER JOIN system.tables AS t
    ON t.database = c.database AND t.name = c.table
WHERE c.database = 'plain' AND t.engine = 'AggregatingMergeTree' AND NOT c.is_in_sorting_key
    AND c.type NOT LIKE 'AggregateFunction(%'"""
SAMPLE_ORPHAN = """INSERT INTO orphan_visits_local
    (click_id, occurred_at, occurred_ms, is_bot, slug, ip, country, user_agent, referer, kind, domain, import_id)
VALUES (generateUUIDv4(), '2026-11-29 14:00:00', 5, 0, 'nope', NULL, 'NL', 'curl/8', '', 'expired', '', NULL)"""


def run(folder: Path) -> dict:
    from chdb import session

    (folder / "config.xml").write_text(CONFIG)
    db = session.Session(f"{folder / 'data'}?config-file={folder / 'config.xml'}")
    try:
        db.query("CREATE DATABASE plain")
        db.query("USE plain")
        for statement in [statement for migration in migrations() for statement in migration.statements(CLUSTER)]:
            db.query(REPLICATED.sub(r"\1()", statement))
        db.query(SAMPLE_CLICKS)
        db.query(SAMPLE_ORPHAN)

        def rows(sql: str) -> list:
            return json.loads(str(db.query(sql, "JSONCompact")))["data"]

        return {
            "version": rows("SELECT version()")[0][0],
            "tables": [
                name for (name,) in rows("SELECT name FROM system.tables WHERE database = 'plain' ORDER BY name")
            ],
            "rollup": rows(ROLLUP),
            "orphans": rows("SELECT slug, toString(kind) FROM plain.orphan_visits_local"),
            "loose": rows(LOOSE),
        }
    finally:
        db.close()


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]))))

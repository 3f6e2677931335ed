"""The click store's ClickHouse schema (sql/clickhouse/) in the current
engine, in-process with chdb, so that what a current ClickHouse refuses is
caught where the tests' cluster is Debian's 18.16
(clicks/tests/test_clickhouse_schema.py runs this in a process of its own:
chdb's engine is one per process, with one configuration).

Run as `python -m testing.chdb_schema FOLDER` from dashboard/: it prints a
JSON object: `version` of the engine, `tables` made from the files with
each Replicated engine replaced by its plain one (chdb has no ZooKeeper to
replicate through; the arguments are the same), and `rollup`, `breakdowns`
and `orphans`: a sample insert's hourly rollup, its breakdown rollup and
its orphan visits, read back; `loose`
the columns of an AggregatingMergeTree outside its sort key that are no
aggregate state (none should be).

`python -m testing.chdb_schema FOLDER STATEMENTS` runs each statement of
the JSON list in the file STATEMENTS (what the tests read the 18.16
cluster with, testing/current_engine.py) over the same schema and samples,
each Distributed table a Merge table over its node's share (chdb has no
cluster to send to), and prints `refused`: each statement the engine did
not take, with its error."""

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from clicks.clickhouse_schema import VERSIONS_DDL, migrations

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
     device, referer, referer_host, rule, import_id, visitor_hash, in_breakdowns)
SELECT generateUUIDv4(), toDateTime('2026-11-29 14:00:00', 'UTC') + number, number % 1000, 1 + number % 2, 7,
       number % 5 = 0, 's', NULL, 'NL', 'Firefox', 'Linux', 'desktop', '', '', if(number % 4 = 0, 'ab1', NULL),
       NULL, number % 3, number < 16
FROM numbers(20)"""
ROLLUP = """SELECT link_id, toString(bucket), is_bot, countMerge(clicks), uniqCombinedMerge(visitors)
FROM click_rollup_hour_local GROUP BY link_id, bucket, is_bot ORDER BY link_id, bucket, is_bot"""
BREAKDOWNS = """SELECT link_id, is_bot, dimension, value, sum(clicks) FROM click_breakdown_month_local
GROUP BY link_id, is_bot, dimension, value ORDER BY link_id, is_bot, dimension, value"""
# Columns of an AggregatingMergeTree neither in its sort key nor an aggregate
# state: what such a table would keep of them is any one row's value.
LOOSE = """SELECT c.table, c.name FROM system.columns AS c INNER JOIN system.tables AS t
    ON t.database = c.database AND t.name = c.table
WHERE c.database = 'plain' AND t.engine = 'AggregatingMergeTree' AND NOT c.is_in_sorting_key
    AND c.type NOT LIKE 'AggregateFunction(%'"""
SAMPLE_ORPHAN = """INSERT INTO orphan_visits_local
    (click_id, occurred_at, occurred_ms, is_bot, slug, ip, country, user_agent, referer, kind, domain, import_id)
VALUES (generateUUIDv4(), '2026-11-29 14:00:00', 5, 0, 'nope', NULL, 'NL', 'curl/8', '', 'expired', '', NULL)"""


DISTRIBUTED = re.compile(r"ENGINE = Distributed\(\w+,\s*currentDatabase\(\),\s*(\w+),.*\)\s*$", re.S)


@contextmanager
def _schema(folder: Path, *, merged: bool = False) -> Iterator:
    """A chdb session with the schema files and the samples in database
    `plain`; `merged`: each Distributed table a Merge table over its share."""
    from chdb import session

    (folder / "config.xml").write_text(CONFIG)
    db = session.Session(f"{folder / 'data'}?config-file={folder / 'config.xml'}")
    try:
        db.query("CREATE DATABASE plain")
        db.query("USE plain")
        db.query(VERSIONS_DDL)  # migrate_clicks's own, made before the files
        for statement in [statement for migration in migrations() for statement in migration.statements(CLUSTER)]:
            statement = REPLICATED.sub(r"\1()", statement)
            db.query(DISTRIBUTED.sub(r"ENGINE = Merge(currentDatabase(), '^\1$')", statement) if merged else statement)
        db.query(SAMPLE_CLICKS)
        db.query(SAMPLE_ORPHAN)
        yield db
    finally:
        db.close()


def refused(folder: Path, statements: list[str]) -> dict:
    found = []
    with _schema(folder, merged=True) as db:
        for statement in statements:
            try:
                db.query(statement, "JSONCompact")
            except Exception as error:  # chdb raises its engine's refusal as a plain RuntimeError
                found.append([statement, str(error)[:500]])
    return {"refused": found}


def run(folder: Path) -> dict:
    with _schema(folder) as db:

        def rows(sql: str) -> list:
            return json.loads(str(db.query(sql, "JSONCompact")))["data"]

        return {
            "version": rows("SELECT version()")[0][0],
            "tables": [
                name for (name,) in rows("SELECT name FROM system.tables WHERE database = 'plain' ORDER BY name")
            ],
            "rollup": rows(ROLLUP),
            "breakdowns": rows(BREAKDOWNS),
            "orphans": rows("SELECT slug, toString(kind) FROM plain.orphan_visits_local"),
            "loose": rows(LOOSE),
        }


if __name__ == "__main__":
    if len(sys.argv) > 2:
        print(json.dumps(refused(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()))))
    else:
        print(json.dumps(run(Path(sys.argv[1]))))

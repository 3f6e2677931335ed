"""The ClickHouse schema files (sql/clickhouse/) as migrate_clicks reads
them, and in the current engine (chdb, dashboard/testing/chdb_schema.py):
the tests' cluster is Debian 12's 18.16, production a current ClickHouse,
and the files must hold to what both accept."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clicks.clickhouse_schema import SCHEMA_DIR, ClickSchemaError, Migration, migrations, plan, split_statements
from clicks.rollups import DIMENSIONS
from slingshot.schema import DASHBOARD_DIR

HOUR = "2026-11-29 14:00:00"


def test_the_current_engine_takes_the_schema_and_rolls_a_sample_insert_up_by_link_hour_and_bot(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "testing.chdb_schema", str(tmp_path)],
        cwd=DASHBOARD_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert int(found["version"].split(".")[0]) >= 26
    assert {"clicks", "clicks_local", "orphan_visits", "orphan_visits_local"} <= set(found["tables"])
    assert {"click_rollup_hour", "click_rollup_hour_local", "click_rollup_hour_mv"} <= set(found["tables"])
    assert {"click_breakdown_month", "click_breakdown_month_local", "click_breakdown_month_mv"} <= set(found["tables"])
    # 20 clicks, links 1 and 2 alternately; every fifth a bot; visitors number % 3.
    assert found["rollup"] == [
        [1, HOUR, 0, 8, 3],
        [1, HOUR, 1, 2, 2],
        [2, HOUR, 0, 8, 3],
        [2, HOUR, 1, 2, 2],
    ]
    # The first 16 rolled up into the breakdowns (in_breakdowns): each its
    # link's, in every dimension; rule 'ab1' for every fourth (no row for none).
    same = [("browser", "Firefox"), ("country", "NL"), ("device", "desktop"), ("os", "Linux"), ("referer_host", "")]
    assert found["breakdowns"] == [
        [link, is_bot, dimension, value, n]
        for link, is_bot, n, ruled in [(1, 0, 6, 3), (1, 1, 2, 1), (2, 0, 6, 0), (2, 1, 2, 0)]
        for dimension, value, n in [*[(d, v, n) for d, v in same], *([("rule", "ab1", ruled)] if ruled else [])]
    ]
    assert found["orphans"] == [["nope", "expired"]]
    assert found["loose"] == []


def test_the_files_keep_to_what_clickhouse_18_16_has():
    text = "\n".join(statement for m in migrations() for statement in m.statements("slingshot")).lower()
    for missing in ("lowcardinality", "datetime64", " ttl ", "on cluster", "simpleaggregatefunction", " bool"):
        assert missing not in text


def test_the_files_are_read_in_version_order_as_statements_with_the_clusters_name():
    found = migrations()
    assert [migration.version for migration in found] == sorted({migration.version for migration in found})
    assert found[0].path == SCHEMA_DIR / "0001_clicks.sql"
    statements = found[0].statements("prod_2")
    assert all("--" not in statement and not statement.endswith(";") for statement in statements)
    distributed = [statement for statement in statements if "ENGINE = Distributed(" in statement]
    assert len(distributed) == 3 and all("Distributed(prod_2, " in statement for statement in distributed)
    assert "{shard}" in statements[0] and "{replica}" in statements[0]  # the server's own macros


def test_a_bad_cluster_name_or_file_is_refused(tmp_path):
    with pytest.raises(ClickSchemaError, match="not a plain name"):
        split_statements("SELECT 1;", cluster="a; DROP")
    with pytest.raises(ClickSchemaError, match="without ';'"):
        split_statements("SELECT 1;\nSELECT 2 -- no end\n", cluster="c")
    (tmp_path / "1_clicks.sql").write_text("SELECT 1;")
    with pytest.raises(ClickSchemaError, match="named NNNN_name.sql"):
        migrations(tmp_path)


def test_the_plan_applies_what_the_nodes_lack_and_refuses_a_node_ahead_or_nodes_that_disagree():
    known = [Migration(1, "0001_a", Path("0001_a.sql")), Migration(2, "0002_b", Path("0002_b.sql"))]
    assert plan({"a:9000": 0, "b:9000": 0}, known) == known
    assert plan({"a:9000": 1, "b:9000": 1}, known) == known[1:]
    assert plan({"a:9000": 2, "b:9000": 2}, known) == []
    with pytest.raises(ClickSchemaError, match=r"newer than this code's \(version 2\): b:9000 at 3"):
        plan({"a:9000": 2, "b:9000": 3}, known)
    with pytest.raises(ClickSchemaError, match="disagree on the schema version: a:9000 at 1, b:9000 at 2"):
        plan({"a:9000": 1, "b:9000": 2}, known)


def test_the_breakdown_rollup_counts_the_dimensions_the_reports_read():
    (view,) = [
        statement
        for migration in migrations()
        for statement in migration.statements("slingshot")
        if "MATERIALIZED VIEW IF NOT EXISTS click_breakdown_month_mv" in statement
    ]
    assert tuple(re.findall(r"\('(\w+)', ", view)) == DIMENSIONS

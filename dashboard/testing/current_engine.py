"""The statements the tests read the ClickHouse cluster with (Debian's
18.16), run again in the current engine (chdb, testing/chdb_schema.py) over
the same schema: what a current ClickHouse refuses of what the store sends
is caught where the tests' cluster would take it. The test modules of the
ClickHouse store use the `current_engine` fixture (clicks/tests/conftest.py)."""

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from slingshot.schema import DASHBOARD_DIR

READS = ("SELECT", "WITH")


def _kept(statements: dict[str, None], text: str) -> None:
    head = text.lstrip().upper()
    # system.* are the server's own tables, which differ between versions and hold no clicks.
    if head.startswith(READS) and "SYSTEM." not in head:
        statements[text] = None


@contextmanager
def recorded_statements() -> Iterator[dict[str, None]]:
    """Every read clickhouse-driver sends while this is open, its parameters
    in place, each text once (in the order first sent)."""
    from clickhouse_driver import Client

    statements: dict[str, None] = {}
    substitute, execute, execute_iter = Client.substitute_params, Client.execute, Client.execute_iter

    def substitute_params(self, query, params, context):
        text = substitute(self, query, params, context)
        _kept(statements, text)
        return text

    def without_params(original):
        def sent(self, query, params=None, *args, **kwargs):
            if params is None:
                _kept(statements, query)
            return original(self, query, params, *args, **kwargs)

        return sent

    Client.substitute_params = substitute_params
    Client.execute, Client.execute_iter = without_params(execute), without_params(execute_iter)
    try:
        yield statements
    finally:
        Client.substitute_params, Client.execute, Client.execute_iter = substitute, execute, execute_iter


def refused(statements: list[str], folder: Path) -> list[list[str]]:
    """[statement, error] of each statement the current engine does not take."""
    listed = folder / "statements.json"
    listed.write_text(json.dumps(statements))
    done = subprocess.run(
        [sys.executable, "-m", "testing.chdb_schema", str(folder), str(listed)],
        cwd=DASHBOARD_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"chdb did not run the statements: {done.stderr[-3000:]}")
    return json.loads(done.stdout)["refused"]

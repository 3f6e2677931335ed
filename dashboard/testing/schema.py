"""A database's schema as pg_dump writes it, for tests that compare two
(tests/test_upgrade.py, tests/test_schema.py)."""

import os
import re
import subprocess

from devstack.postgres import pg_bindir


def schema_of(database: str, *, host: str, port: int, user: str, password: str | None = None) -> list[str]:
    """pg_dump's schema of a database as its statements, with two things set
    aside that neither the code nor the operator reads: the order of a
    table's columns (an upgrade adds a column at the end of its table, a new
    install has it where sql/ writes it; every COPY and INSERT names its
    columns), and which months have click partitions yet (the importer makes
    them as clicks need them; each has its parent's columns and indexes)."""
    dump = subprocess.run(
        [str(pg_bindir() / "pg_dump"), "--schema-only", "--no-owner", "--no-privileges"]
        + ["-h", host, "-p", str(port), "-U", user, database],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **({"PGPASSWORD": password} if password else {})},
    ).stdout
    lines = [
        line
        for line in dump.splitlines()
        if line.strip() and not line.startswith(("--", "\\restrict", "\\unrestrict", "SET ", "SELECT pg_catalog."))
    ]
    statements = []
    for statement in "\n".join(lines).split(";\n"):
        if PARTITION.search(statement):
            continue
        head, _, rest = statement.partition("(\n")
        if head.startswith("CREATE TABLE") and rest:
            body, _, tail = rest.rpartition("\n)")
            statement = head + "(\n" + "\n".join(sorted(line.rstrip(",") for line in body.split("\n"))) + "\n)" + tail
        statements.append(statement)
    return statements


PARTITION = re.compile(r"_y\d{4}m\d{2}(?![0-9])")

"""The click store's schema on ClickHouse: the numbered SQL files of
sql/clickhouse/, applied in order to every node of the cluster by
`manage.py migrate_clicks`, each node recording the versions it has in
`click_schema_migrations` (a table of its own, not replicated).

Nothing here is ON CLUSTER: each statement goes to each node, as 18.16 needs
(it crashes on a distributed statement without a ZooKeeper session), and
every statement is IF NOT EXISTS, so a file applied again changes nothing.
18.16 has no `ADD COLUMN IF NOT EXISTS`: such a statement is sent without
it to a node that lacks the column, and not at all to one that has it (the
other replica of a shard gets a replicated table's new column from the first)."""

import re
from dataclasses import dataclass
from pathlib import Path

from slingshot.schema import SQL_DIR

SCHEMA_DIR = SQL_DIR / "clickhouse"
FILE_NAME = re.compile(r"(\d{4})_[a-z0-9_]+\.sql")
_ADD_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS (\w+) ")
_HAS_COLUMN = (
    "SELECT count() FROM system.columns WHERE database = currentDatabase() AND table = %(table)s AND name = %(column)s"
)
VERSIONS_DDL = (
    "CREATE TABLE IF NOT EXISTS click_schema_migrations "
    "(version UInt32, name String, applied_at DateTime('UTC')) ENGINE = MergeTree ORDER BY version"
)


class ClickSchemaError(RuntimeError):
    """The cluster's schema cannot be brought to this code's, said in a sentence."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    def statements(self, cluster: str) -> list[str]:
        return split_statements(self.path.read_text(), cluster=cluster)


def migrations(directory: Path = SCHEMA_DIR) -> list[Migration]:
    """The files of `directory` in version order; a version twice is a mistake."""
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = FILE_NAME.fullmatch(path.name)
        if not match:
            raise ClickSchemaError(f"{path.name}: a ClickHouse schema file is named NNNN_name.sql")
        found.append(Migration(int(match.group(1)), path.stem, path))
    versions = [migration.version for migration in found]
    if len(set(versions)) != len(versions):
        raise ClickSchemaError(f"two files of {directory} have the same version")
    return found


def split_statements(text: str, *, cluster: str) -> list[str]:
    """The statements of a file: comments (`--` to the end of a line) left
    out, split at each `;` that ends a line, {cluster} replaced by the
    cluster's name (the server expands {shard} and {replica} itself)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", cluster):
        raise ClickSchemaError(f"CLICKHOUSE_CLUSTER {cluster!r} is not a plain name")
    lines = [re.sub(r"\s*--.*$", "", line) for line in text.splitlines()]
    statements, current = [], []
    for line in lines:
        current.append(line)
        if line.rstrip().endswith(";"):
            statements.append("\n".join(current).strip().rstrip(";").strip())
            current = []
    if "\n".join(current).strip():
        raise ClickSchemaError("a ClickHouse schema file ends in a statement without ';'")
    return [statement.replace("{cluster}", cluster) for statement in statements if statement]


def recorded_version(client) -> int:
    """The newest version a node has recorded (0: none), the table made first."""
    client.execute(VERSIONS_DDL)
    return client.execute("SELECT max(version) FROM click_schema_migrations")[0][0] or 0


def plan(versions: dict[str, int], known: list[Migration]) -> list[Migration]:
    """What to apply, given each node's recorded version; refused when a node
    is ahead of this code or when the nodes disagree."""
    latest = known[-1].version if known else 0
    ahead = {node: version for node, version in versions.items() if version > latest}
    if ahead:
        listed = ", ".join(f"{node} at {version}" for node, version in sorted(ahead.items()))
        raise ClickSchemaError(
            f"the click store's schema is newer than this code's (version {latest}): {listed}. "
            "Run the Slingshot release that wrote it."
        )
    if len(set(versions.values())) > 1:
        listed = ", ".join(f"{node} at {version}" for node, version in sorted(versions.items()))
        raise ClickSchemaError(
            f"the click store's nodes disagree on the schema version: {listed}. "
            "A node that is behind was added or restored by hand; bring it to the others' version first."
        )
    current = next(iter(versions.values()), 0)
    return [migration for migration in known if migration.version > current]


def migrate(clients: dict[str, object], *, cluster: str, known: list[Migration] | None = None) -> list[Migration]:
    """Brings every node (name: clickhouse-driver client) to the newest
    version; returns the migrations applied, empty when there were none.
    Each file goes to every node before the next file, and the nodes record
    its version once all of its statements ran on all of them."""
    known = migrations() if known is None else known
    todo = plan({name: recorded_version(client) for name, client in clients.items()}, known)
    for migration in todo:
        statements = migration.statements(cluster)
        for name, client in clients.items():
            for statement in statements:
                try:
                    _apply(client, statement)
                except Exception as error:
                    first_line = (str(error).strip() or type(error).__name__).splitlines()[0]
                    raise ClickSchemaError(f"{migration.path.name} on {name}: {first_line}") from error
        for client in clients.values():
            client.execute(
                "INSERT INTO click_schema_migrations (version, name, applied_at) VALUES",
                [{"version": migration.version, "name": migration.name, "applied_at": _now()}],
            )
    return todo


def _apply(client, statement: str) -> None:
    added = _ADD_COLUMN.match(statement)
    if added:
        table, column = added.groups()
        if client.execute(_HAS_COLUMN, {"table": table, "column": column})[0][0]:
            return
        statement = statement.replace(" IF NOT EXISTS", "", 1)
    client.execute(statement)


def _now():
    from datetime import UTC, datetime

    return datetime.now(UTC).replace(microsecond=0, tzinfo=None)

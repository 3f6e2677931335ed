"""A click entry of the stream as click_record.toml declares it: the one
declaration of the record format that slingshot.contract, the importer
(clicks/entries.pyx), clicks/records.py and the tests take it from.

Run as a script, it prints the tables docs/contract.md shows of it
(edge/t/test_click_record.py holds the document to them).
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path

SPEC = Path(__file__).with_name("click_record.toml")


@dataclass(frozen=True)
class Line:
    """A line of an entry's `clicks` field: a header line, or a click's."""

    name: str
    holds: str
    empty: bool
    label: str = ""
    pattern: str | None = None
    orphan_pattern: str | None = None
    max_bytes: int | None = None


@dataclass(frozen=True)
class RecordFormat:
    version: str
    fields: tuple[tuple[str, str], ...]  # (name, what it holds)
    header: tuple[Line, ...]
    lines: tuple[Line, ...]  # a click's, in order
    orphan_kinds: tuple[tuple[str, str], ...]  # (kind, what the edge found)
    older: dict[str, tuple[str, ...]]  # an older version's line names a click

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(kind for kind, _ in self.orphan_kinds)

    def line(self, name: str) -> Line:
        (found,) = (line for line in self.lines if line.name == name)
        return found

    def line_names(self, version: str) -> tuple[str, ...]:
        """A click's lines in an entry of that version (this one or an older one)."""
        if version == self.version:
            return tuple(line.name for line in self.lines)
        return self.older[version]

    def orphan_pattern(self) -> str:
        """What an orphan visit's rule line matches: its kind, then maybe a space and its host."""
        return self.line("rule").orphan_pattern.replace("{kinds}", "|".join(self.kinds))

    def holds(self, line: Line) -> str:
        return line.holds.replace("{max_bytes}", str(line.max_bytes))

    def markdown(self) -> list[str]:
        """The tables of docs/contract.md: the entry's fields, its lines, the orphan kinds."""
        fields = ["| field | value |", "|---|---|"]
        fields += [f"| `{name}` | {holds.replace('{version}', self.version)} |" for name, holds in self.fields]
        lines = ["| line | holds |", "|---|---|"]
        lines += [f"| {number} | {self.holds(line)} |" for number, line in enumerate(self.header, start=1)]
        lines.append("| then, for each click: | |")
        lines += [f"| {line.label} | {self.holds(line)} |" for line in self.lines]
        kinds = ["| kind | what the edge found |", "|---|---|"]
        kinds += [f"| `{kind}` | {found} |" for kind, found in self.orphan_kinds]
        return ["\n".join(table) for table in (fields, lines, kinds)]


def load(path: Path = SPEC) -> RecordFormat:
    spec = tomllib.loads(path.read_text())
    return RecordFormat(
        version=spec["version"],
        fields=tuple((field["name"], field["holds"]) for field in spec["field"]),
        header=tuple(Line(**line) for line in spec["header"]),
        lines=tuple(Line(**line) for line in spec["line"]),
        orphan_kinds=tuple((kind["name"], kind["found"]) for kind in spec["orphan_kind"]),
        older={older["version"]: tuple(older["lines"]) for older in spec["older"]},
    )


RECORD = load()


if __name__ == "__main__":
    print("\n\n".join(RECORD.markdown()))

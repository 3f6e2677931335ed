"""This version of Slingshot, and what its releases promise an operator.

A release is a version number here, a section of CHANGELOG.md, and the
lock of its migrations (RELEASED_MIGRATIONS): every migration file of the
release with its SHA-256. A migration that has been released is never
edited again (tests/test_release.py fails when one differs); a change to the
schema is a new migration, and the same change in sql/, which stays the
schema as it is (docs/releasing.md).
`python -m devstack.release` writes the lock when a version is released
(docs/releasing.md)."""

import hashlib
from pathlib import Path

VERSION = "1.1.1.dev0"

DASHBOARD_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = DASHBOARD_DIR.parent
RELEASED_MIGRATIONS = Path(__file__).resolve().with_name("released_migrations.txt")


def schema_files() -> list[Path]:
    """The apps' migrations."""
    return sorted(DASHBOARD_DIR.glob("*/migrations/0*.py"))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lock_text(version: str) -> str:
    lines = [f"# The migrations of Slingshot {version}: never edited again (slingshot/release.py)."]
    lines += [f"{digest(path)}  {path.relative_to(REPO_DIR).as_posix()}" for path in schema_files()]
    return "\n".join(lines) + "\n"


def released() -> tuple[str, dict[str, str]]:
    """The version the lock was written for, and its files' digests by path."""
    lines = RELEASED_MIGRATIONS.read_text().splitlines()
    version = lines[0].split("Slingshot ", 1)[1].split(":", 1)[0]
    files = dict(reversed(line.split("  ", 1)) for line in lines[1:] if line.strip())
    return version, files

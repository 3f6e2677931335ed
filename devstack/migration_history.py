"""`python -m devstack.migration_history`: can this checkout migrate the
database?

A database migrated by a newer version of Slingshot, or by a development
branch, holds applied migrations of Slingshot's apps that this checkout does
not have: `migrate` cannot take it back. Prints those migrations, one
`app.name` a line, and exits 2 if there are any; devstack/stack.py says
what to do. (A database made by any earlier release or main before 1.0.0
is one `migrate` brings up to date: docs/operations.md, "Upgrading".)
"""

import sys
from pathlib import Path

import django
from django.apps import apps
from django.db import connection
from django.db.migrations.exceptions import InconsistentMigrationHistory
from django.db.migrations.loader import MigrationLoader

from devstack import REPO

DASHBOARD = REPO / "dashboard"
EXIT_FOREIGN_HISTORY = 2


def foreign_migrations() -> list[str]:
    loader = MigrationLoader(connection, ignore_no_migrations=True)
    dashboard = DASHBOARD.resolve()
    ours = {config.label for config in apps.get_app_configs() if dashboard in Path(config.path).resolve().parents}
    unknown = sorted(
        f"{app}.{name}"
        for app, name in loader.applied_migrations
        if app in ours and (app, name) not in loader.disk_migrations
    )
    if unknown:
        return unknown
    try:
        loader.check_consistent_history(connection)
    except InconsistentMigrationHistory as exc:
        return [str(exc)]
    return []


def main() -> int:
    django.setup()
    unknown = foreign_migrations()
    for line in unknown:
        print(line)
    return EXIT_FOREIGN_HISTORY if unknown else 0


if __name__ == "__main__":
    sys.path.insert(0, str(DASHBOARD))
    sys.exit(main())

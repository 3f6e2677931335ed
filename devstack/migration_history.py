"""Can this checkout migrate the database?

A database migrated by a newer version of Slingshot, or by a development
branch, holds applied migrations of Slingshot's apps that this checkout does
not have: `migrate` cannot take it back. foreign_migrations() names them;
devstack/django_steps.py checks before it migrates, and devstack/stack.py
says what to do. (A database made by any earlier release or main before 1.0.0
is one `migrate` brings up to date: docs/operations.md, "Upgrading".)
"""

from pathlib import Path

from django.apps import apps
from django.db import connection
from django.db.migrations.exceptions import InconsistentMigrationHistory
from django.db.migrations.loader import MigrationLoader

from devstack import REPO

DASHBOARD = REPO / "dashboard"


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

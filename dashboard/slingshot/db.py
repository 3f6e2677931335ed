"""Which database a query goes to.

Everything reads and writes the primary ("default") unless it asks for
`reports_db()`: reports, exports and the links list do, and get the
streaming replica when DATABASE_REPLICA_URL names one. A replica is
behind the primary by its replication lag (usually milliseconds), which
these pages can afford: they show clicks, which arrive later than that
anyway. Reads that must see a write just made (a form's redirect to the
link it saved, the API's reply) use the ORM's default and so the primary.
"""

from django.conf import settings

REPLICA = "replica"


def reports_db() -> str:
    """The alias heavy reads use: the replica if there is one."""
    return REPLICA if REPLICA in settings.DATABASES else "default"


class PrimaryRouter:
    """Keeps the ORM on the primary; only `reports_db()` callers reach the replica."""

    def db_for_read(self, model, **hints):
        return "default"

    def db_for_write(self, model, **hints):
        return "default"

    def allow_relation(self, obj1, obj2, **hints):
        return True

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == "default"

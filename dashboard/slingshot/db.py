"""Which database a query goes to.

Everything reads and writes the primary ("default") unless it asks for
`reports_db()`: reports, exports and the links list do, and get the
streaming replica when DATABASE_REPLICA_URL names one. A replica is behind
the primary by its replication lag (usually milliseconds), which these pages
can afford: they show clicks, which arrive later than that anyway. Reads
that must see a write just made (a form's redirect to the link it saved,
the API's reply) use the ORM's default and so the primary.

A replica that cannot be reached sends these reads to the primary for
REPLICA_RETRY_AFTER seconds, per process, rather than failing them.
"""

import logging
import threading
import time

from django.conf import settings
from django.db import OperationalError, connections

log = logging.getLogger(__name__)

REPLICA = "replica"
REPLICA_RETRY_AFTER = 30.0

_lock = threading.Lock()
_replica_down_until = 0.0


def reports_db() -> str:
    """The alias heavy reads use: the replica if there is one and it answers."""
    global _replica_down_until
    if REPLICA not in settings.DATABASES or time.monotonic() < _replica_down_until:
        return "default"
    try:
        connections[REPLICA].ensure_connection()
    except OperationalError as exc:
        with _lock:
            first = _replica_down_until == 0.0 or time.monotonic() >= _replica_down_until
            _replica_down_until = time.monotonic() + REPLICA_RETRY_AFTER
        if first:
            log.warning("the database replica failed (%s); reports read the primary for %gs", exc, REPLICA_RETRY_AFTER)
        return "default"
    return REPLICA


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

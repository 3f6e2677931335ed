"""Which database a query goes to.

Everything reads and writes the primary ("default") unless it asks for
`reports_db()`: reports, exports and the links list do, and get the
streaming replica when DATABASE_REPLICA_URL names one. A replica is behind
the primary by its replication lag (usually milliseconds), which reports
can afford: they show clicks, which arrive later than that anyway. Reads
that must see a write just made (a form's redirect to the link it saved,
the API's reply) use the ORM's default and so the primary.

The links list shows what people change, though: after a write by a person
(any successful POST, PATCH, PUT or DELETE, through the pages or the API,
PrimaryAfterWriteMiddleware), their lists and exports read the primary for
DATABASE_REPLICA_PIN_SECONDS, so that they see their own change whatever the
lag. The pin is a Redis key per person, shared by every dashboard process;
when Redis cannot say, the primary is read.

A replica that cannot be reached sends these reads to the primary for
REPLICA_RETRY_AFTER seconds, per process, rather than failing them.
"""

import logging
import threading
import time

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import OperationalError, connections
from django.http import HttpRequest, HttpResponse

from slingshot.redis import RedisUnavailable, quick_call

log = logging.getLogger(__name__)

REPLICA = "replica"
REPLICA_RETRY_AFTER = 30.0

_lock = threading.Lock()
_replica_down_until = 0.0


def _pin_key(user_id: int) -> str:
    return f"slingshot:primary-pin:{user_id}"


def pin_to_primary(user: AbstractBaseUser) -> None:
    """After the person's write: their reports_db() reads are the primary's
    for DATABASE_REPLICA_PIN_SECONDS. Nothing without a replica."""
    if REPLICA not in settings.DATABASES or not user.is_authenticated:
        return
    seconds = settings.DATABASE_REPLICA_PIN_SECONDS
    try:
        quick_call(lambda client: client.set(_pin_key(user.pk), 1, px=int(seconds * 1000)), what="primary pin")
    except RedisUnavailable as exc:
        log.warning("%s may not see their change in lists for a moment: %s", user.get_username(), exc)


def _pinned(user: AbstractBaseUser) -> bool:
    try:
        return bool(quick_call(lambda client: client.exists(_pin_key(user.pk)), what="primary pin"))
    except RedisUnavailable:
        return True


def reports_db(user: AbstractBaseUser | None = None) -> str:
    """The alias heavy reads use: the replica if there is one and it answers,
    but the primary for `user` right after a write of theirs (pin_to_primary)."""
    global _replica_down_until
    if REPLICA not in settings.DATABASES or time.monotonic() < _replica_down_until:
        return "default"
    if user is not None and user.is_authenticated and _pinned(user):
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


class PrimaryAfterWriteMiddleware:
    """Pins the person's lists to the primary after any write of theirs that
    succeeded (pin_to_primary), through the pages or the API. After the
    view, so that DRF's token authentication has set request.user."""

    UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method in self.UNSAFE and response.status_code < 400:
            user = getattr(request, "user", None)
            if user is not None:
                pin_to_primary(user)
        return response

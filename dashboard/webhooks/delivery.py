"""The deliverer (`manage.py deliver_webhooks`): sends due messages to
their webhooks and keeps the log of every attempt (docs/webhooks.md).

At least once, never lost: a message is claimed by moving its
`next_attempt_at` a lease ahead (WEBHOOKS_LEASE_SECONDS) in the transaction that
reads it, and the lease is renewed while the process holds it; a
deliverer killed while sending leaves it due again once the lease ends,
with the same `webhook-id`. Each attempt's outcome is written with
the message's next state in one transaction.

Several webhooks deliver side by side: one thread moves every request on
at once (libcurl's multi interface), at most `per_webhook` at once to one
webhook, so a slow or dead receiver (each request ends within `timeout`
seconds) holds up only its own messages. A message being retried waits
for its time without holding up the others.
"""

import itertools
import logging
import random
import time
from collections import defaultdict, deque
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from slingshot import sealing
from slingshot.outbound import OutboundError, any_address, is_public_address
from slingshot.outbound.multi import MultiPoster

from . import signing

log = logging.getLogger(__name__)

# Seconds from a failed attempt to the next: the first three within four
# minutes, then growing to hours; past the last, the message is given up
# (about 31 hours after its first attempt).
RETRY_DELAYS = (10, 30, 90, 300, 1800, 3600, 7200, 14400, 28800, 28800, 28800)
JITTER = 0.1
# A webhook that has failed every attempt for this long is disabled.
FAILING_LIMIT = timedelta(hours=24)
# A rotated secret signs beside the new one for this long.
PREVIOUS_SECRET_FOR = timedelta(hours=24)
RESPONSE_KEPT = 1024
USER_AGENT = {"user-agent": "Slingshot-Webhooks/1"}
# Outcomes written in one transaction at most; fewer when record's time is up.
WRITE_EVERY = 500
SECRET_PURPOSE = b"slingshot webhook secrets"
# Messages a webhook may have claimed in this process, in flight or waiting: a claim
# leaves webhooks with this many alone.
QUEUED_PER_WEBHOOK = 200


@dataclass
class Job:
    message_id: int
    webhook_id: int
    msg_id: str
    body: str
    attempts: int
    url: str
    secrets: list[str]


@dataclass
class Outcome:
    job: Job
    at: datetime
    status: int | None
    duration_ms: int
    response: str
    error: str

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def retry_delay(attempts: int) -> float | None:
    """Seconds until the next attempt after `attempts` failed ones; None: give up."""
    if attempts > len(RETRY_DELAYS):
        return None
    delay = RETRY_DELAYS[attempts - 1]
    return delay * random.uniform(1 - JITTER, 1 + JITTER)


def signing_secrets(secret: bytes, previous: bytes, previous_until: datetime | None, now: datetime) -> list[str]:
    """The secrets that sign now: the webhook's, and the one it had before
    a rotation for a day after; none when its own cannot be read (sealed
    under another SECRET_KEY: a rotation gives it one that can). A previous
    one that cannot be read is left out."""
    try:
        found = [sealing.unseal(secret, purpose=SECRET_PURPOSE)]
    except sealing.Unreadable:
        return []
    if previous and previous_until and previous_until > now:
        with suppress(sealing.Unreadable):
            found.append(sealing.unseal(previous, purpose=SECRET_PURPOSE))
    return found


UNREADABLE_SECRET = "its signing secret cannot be read (SECRET_KEY changed since it was made): rotate it"


_CLAIM = """
WITH due AS (
    SELECT m.id FROM webhooks_message m JOIN webhooks_webhook w ON w.id = m.webhook_id
    WHERE m.next_attempt_at <= now() AND w.enabled AND m.webhook_id <> ALL(%(full)s::bigint[])
    ORDER BY m.next_attempt_at LIMIT %(limit)s
    FOR UPDATE OF m SKIP LOCKED
)
UPDATE webhooks_message m SET next_attempt_at = now() + %(lease)s * interval '1 second'
FROM due, webhooks_webhook w
WHERE m.id = due.id AND w.id = m.webhook_id
RETURNING m.id, m.webhook_id, m.msg_id, m.body, m.attempts, w.url, w.secret, w.previous_secret, w.previous_until
"""

_RENEW = """
UPDATE webhooks_message SET next_attempt_at = now() + %s * interval '1 second'
WHERE id = ANY(%s) AND state = 'pending'
"""
_ATTEMPTS = """
INSERT INTO webhooks_attempt (message_id, webhook_id, number, at, status_code, duration_ms, response, error,
                              next_attempt_at)
SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::int[], %s::timestamptz[], %s::int[], %s::int[], %s::text[],
                     %s::text[], %s::timestamptz[])
"""
_MESSAGES = """
UPDATE webhooks_message m SET state = t.state, attempts = t.attempts, next_attempt_at = t.next_at
FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::timestamptz[]) AS t(id, state, attempts, next_at)
WHERE m.id = t.id
"""
_DELIVERED = "UPDATE webhooks_webhook SET failing_since = NULL WHERE id = ANY(%s) AND failing_since IS NOT NULL"
_FAILING = "UPDATE webhooks_webhook SET failing_since = %s WHERE id = ANY(%s) AND failing_since IS NULL"
_DISABLE = """
UPDATE webhooks_webhook SET enabled = false, disabled_reason = %s, updated_at = now()
WHERE id = %s AND enabled
"""
_DISABLE_FAILING = """
UPDATE webhooks_webhook SET enabled = false, updated_at = now(),
    disabled_reason = 'Every delivery failed for 24 hours (the last: ' || left(%s, 200) || ').'
WHERE id = %s AND enabled AND failing_since <= %s
"""
_PARK = "UPDATE webhooks_message SET next_attempt_at = NULL WHERE webhook_id = ANY(%s) AND state = 'pending'"


class Deliverer:
    """Sends claimed messages, all from the calling thread: libcurl's multi
    interface (slingshot/outbound/multi.py) moves every transfer on at
    once, at most `per_webhook` of them to one webhook, the rest of its
    messages waiting here their turn."""

    def __init__(self, *, concurrency: int, per_webhook: int, timeout: float, private_addresses: bool):
        self.per_webhook = per_webhook
        self.timeout = timeout
        self.lease = max(settings.WEBHOOKS_LEASE_SECONDS, 1.0)
        self._poster = MultiPoster(
            allowed=any_address if private_addresses else is_public_address,
            timeout=timeout,
            keep_bytes=RESPONSE_KEPT,
            connections=concurrency,
        )
        self._keys = itertools.count()
        self._in_flight: dict[int, tuple[Job, datetime]] = {}
        self._sending: dict[int, int] = defaultdict(int)  # webhook -> in flight
        self._waiting: dict[int, deque[Job]] = defaultdict(deque)
        self._outcomes: list[Outcome] = []
        self._renew_at = time.monotonic() + self.lease / 3

    # --- claiming and sending ------------------------------------------------------

    def _full(self) -> list[int]:
        return [
            webhook
            for webhook, sending in self._sending.items()
            if sending + len(self._waiting[webhook]) >= QUEUED_PER_WEBHOOK
        ]

    def busy(self) -> int:
        return len(self._in_flight) + sum(len(queue) for queue in self._waiting.values())

    def claim(self, limit: int = 500) -> int:
        """Claims due messages and starts sending them; how many."""
        now = datetime.now(UTC)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_CLAIM, {"full": self._full(), "limit": limit, "lease": self.lease})
            rows = cursor.fetchall()
        secrets_of: dict[int, list[str]] = {}
        for message_id, webhook_id, msg_id, body, attempts, url, secret, previous, previous_until in rows:
            if webhook_id not in secrets_of:
                secrets_of[webhook_id] = signing_secrets(secret, previous, previous_until, now)
            job = Job(message_id, webhook_id, msg_id, body, attempts, url, secrets_of[webhook_id])
            if job.secrets:
                self._start(job)
            else:  # never sent unsigned: a failed attempt, retried as any other
                self._outcomes.append(Outcome(job, now, None, 0, "", UNREADABLE_SECRET))
        return len(rows)

    def _start(self, job: Job) -> None:
        if self._sending[job.webhook_id] >= self.per_webhook:
            self._waiting[job.webhook_id].append(job)
            return
        at = datetime.now(UTC)
        headers = {**signing.headers(job.secrets, job.msg_id, int(at.timestamp()), job.body), **USER_AGENT}
        key = next(self._keys)
        try:
            self._poster.post(key, job.url, job.body.encode(), headers)
        except OutboundError as exc:  # a URL the check refuses now
            self._outcomes.append(Outcome(job, at, None, 0, "", str(exc)[:300]))
            return
        self._sending[job.webhook_id] += 1
        self._in_flight[key] = (job, at)

    def pump(self, wait: float = 0.0) -> None:
        """Moves the transfers on, waiting up to `wait` seconds for one to
        have something to do; each one that ended becomes an outcome, and
        gives its place to its webhook's next message."""
        for key, reply in self._poster.run(wait):
            job, at = self._in_flight.pop(key)
            response = reply.body.decode("utf-8", "replace")
            self._outcomes.append(
                Outcome(job, at, reply.status, int(reply.seconds * 1000), response, reply.error[:300])
            )
            self._sending[job.webhook_id] -= 1
            waiting = self._waiting[job.webhook_id]
            if waiting:
                self._start(waiting.popleft())

    # --- recording ------------------------------------------------------------------

    def _held(self) -> list[int]:
        held = [job.message_id for job, _ in self._in_flight.values()]
        held += [job.message_id for queue in self._waiting.values() for job in queue]
        return held + [outcome.job.message_id for outcome in self._outcomes]

    def renew(self) -> None:
        """Moves the lease of every message this process holds (sending,
        waiting its turn, or sent and not recorded yet) a lease ahead
        again, every third of a lease: a long queue keeps its messages for
        as long as this process lives, and a process killed lets them go a
        lease later."""
        if time.monotonic() < self._renew_at:
            return
        self._renew_at = time.monotonic() + self.lease / 3
        held = self._held()
        if held:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(_RENEW, [self.lease, held])

    def record(self, wait: float = 0.0) -> int:
        """Moves the transfers on (pump) for up to `wait` seconds, or until
        WRITE_EVERY of them ended, and writes their outcomes with the
        messages' next states in one transaction; how many."""
        deadline = time.monotonic() + wait
        self.pump(min(wait, 0.01))
        while len(self._outcomes) < WRITE_EVERY and self._in_flight and (left := deadline - time.monotonic()) > 0:
            self.pump(min(left, 0.01))
        self.renew()
        outcomes, self._outcomes = self._outcomes, []
        if outcomes:
            self._write(outcomes)
        return len(outcomes)

    def _write(self, outcomes: list[Outcome]) -> None:
        attempt_rows: list[list] = [[] for _ in range(9)]
        message_rows: list[list] = [[] for _ in range(4)]
        delivered, failing, gone, failed_last = set(), set(), {}, {}
        for outcome in outcomes:
            job = outcome.job
            number = job.attempts + 1
            if outcome.delivered:
                state, next_at = "delivered", None
                delivered.add(job.webhook_id)
            else:
                delay = retry_delay(number)
                state = "pending" if delay is not None else "failed"
                next_at = outcome.at + timedelta(seconds=delay) if delay is not None else None
                failing.add(job.webhook_id)
                failed_last[job.webhook_id] = outcome.error or f"HTTP {outcome.status}"
                if outcome.status == 410:
                    gone[job.webhook_id] = outcome
            for column, value in zip(
                attempt_rows,
                (
                    job.message_id,
                    job.webhook_id,
                    number,
                    outcome.at,
                    outcome.status,
                    outcome.duration_ms,
                    outcome.response,
                    outcome.error,
                    next_at,
                ),
                strict=True,
            ):
                column.append(value)
            for column, value in zip(message_rows, (job.message_id, state, number, next_at), strict=True):
                column.append(value)
        now = datetime.now(UTC)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_ATTEMPTS, attempt_rows)
            cursor.execute(_MESSAGES, message_rows)
            if delivered:
                cursor.execute(_DELIVERED, [sorted(delivered)])
            failing -= delivered
            if failing:
                cursor.execute(_FAILING, [now, sorted(failing)])
            disabled = []
            for webhook_id in sorted(gone):
                cursor.execute(
                    _DISABLE,
                    [f"The receiver answered 410 Gone at {gone[webhook_id].at:%Y-%m-%d %H:%M:%S} UTC.", webhook_id],
                )
                if cursor.rowcount:
                    disabled.append(webhook_id)
            for webhook_id in sorted(failing - set(gone)):
                cursor.execute(_DISABLE_FAILING, [failed_last[webhook_id], webhook_id, now - FAILING_LIMIT])
                if cursor.rowcount:
                    disabled.append(webhook_id)
            if disabled:
                cursor.execute(_PARK, [disabled])
                log.warning("webhooks disabled: %s", disabled)

    def close(self) -> None:
        """Lets the transfers in flight end (within the timeout), and records them."""
        deadline = time.monotonic() + self.timeout + 1
        while self._in_flight and time.monotonic() < deadline:
            self.record(wait=0.05)
        self.record()
        self._poster.close()


_PRUNE = """
WITH gone AS (
    SELECT id FROM webhooks_message
    WHERE state <> 'pending' AND created_at < now() - %(days)s * interval '1 day'
    ORDER BY id LIMIT %(limit)s
), attempts AS (
    DELETE FROM webhooks_attempt WHERE message_id IN (SELECT id FROM gone)
)
DELETE FROM webhooks_message WHERE id IN (SELECT id FROM gone)
"""


def prune_log(days: int, limit: int = 10_000) -> int:
    """Deletes up to `limit` messages delivered or given up more than
    `days` ago, with their attempts; how many."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_PRUNE, {"days": days, "limit": limit})
        return cursor.rowcount

"""Links with a password. The edge shows their visitors the password page
on the link's own domain and asks the dashboard whether a password is right
(web.edge_calls; docs/contract.md, "Password checks"); the right one lets
the visitor through the edge's ordinary redirect, which records the click
and counts the visit as for any link.

Every check is refused before any hashing, with how long to wait, when:
- its address made LINK_UNLOCK_FAILURE_LIMIT wrong guesses at the link, or
- the link had LINK_UNLOCK_LINK_FAILURE_LIMIT wrong guesses from anywhere,
  each count ending LINK_UNLOCK_COOLOFF_MINUTES after its last failure; or
- the dashboard already checked LINK_UNLOCK_CHECKS_PER_SECOND this second,
  counted in units of one check with the link hasher (check_cost): so many
  parallel guesses cost at most that much CPU, whatever their addresses.
While Redis does not answer nobody is let in: a failure count that cannot
be kept must not let guesses through.

Link passwords have a hasher of their own, faster than the one of people's
passwords: it only guards the link's target, which PostgreSQL and Redis
keep in plain text beside it, so a stolen database yields the targets
without any cracking, and a slower hash would only make guessing cheaper
to turn against the dashboard. A hash made by another hasher (before it
existed) is made again with it at the first right password.
"""

import enum
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher, check_password, identify_hasher, make_password
from django.utils.crypto import RANDOM_STRING_CHARS

from slingshot.redis import RedisUnavailable, quick_call
from slingshot.text import unstorable

from .models import Link
from .publishing import password_salt

# The longest password a link can have (links.services.link_password).
PASSWORD_MAX_LENGTH = 128
FAILURES_KEY_PREFIX = "slingshot:unlock-failures:"
CHECKS_KEY_PREFIX = "slingshot:unlock-checks:"


class LinkPasswordHasher(PBKDF2PasswordHasher):
    """PBKDF2-SHA256 at 20,000 iterations: about 5 ms a check, against
    Django's 1,000,000 (about 0.2 s) for people's passwords."""

    iterations = 20_000


HASHER = LinkPasswordHasher()


def hash_password(raw: str) -> str:
    return make_password(raw, hasher=HASHER)


def check_cost(encoded: str) -> int:
    """What checking a password against `encoded` costs, in checks by the
    link hasher: a PBKDF2 hash by its iterations, another algorithm as
    Django's default PBKDF2."""
    try:
        hasher = identify_hasher(encoded)
    except ValueError:
        return 1  # no hash: nothing is computed
    iterations = PBKDF2PasswordHasher.iterations
    if isinstance(hasher, PBKDF2PasswordHasher):
        iterations = int(hasher.decode(encoded)["iterations"])
    return max(1, math.ceil(iterations / HASHER.iterations))


class Outcome(enum.StrEnum):
    RIGHT = "right"
    WRONG = "wrong"
    LOCKED = "locked"  # refused before any hashing: see `scope` and `retry_after`
    UNAVAILABLE = "unavailable"  # Redis did not answer


class Scope(enum.StrEnum):
    ADDRESS = "address"  # too many wrong guesses at this link from this address
    LINK = "link"  # too many wrong guesses at this link from anywhere
    EVERYONE = "everyone"  # too many checks this second


@dataclass(frozen=True)
class Check:
    outcome: Outcome
    scope: Scope | None = None
    retry_after: int = 0  # seconds, when LOCKED

    def as_json(self) -> dict:
        answer = {"outcome": str(self.outcome)}
        if self.outcome is Outcome.LOCKED:
            answer.update(scope=str(self.scope), retry_after=self.retry_after)
        return answer


def failure_keys(link_id: int, address: str) -> tuple[str, str]:
    """The wrong guesses at the link from `address`, and from anywhere."""
    return f"{FAILURES_KEY_PREFIX}{link_id}:{address}", f"{FAILURES_KEY_PREFIX}{link_id}"


def check_link_password(*, link_id: int, password: str, address: str) -> Check:
    """Whether `password` is the password of the link `link_id`, for a
    visitor at `address`. A link without a password (or none at all) has no
    right password: the edge only asks about links it was told have one."""
    encoded = Link.objects.filter(pk=link_id).values_list("password", flat=True).first() or ""
    by_address, by_link = failure_keys(link_id, address)
    try:
        locked = quick_call(lambda client: _lockout(client, by_address, by_link), what="unlock failures")
        if locked:
            return locked
        cost = check_cost(encoded)
        if not quick_call(lambda client: _take_budget(client, cost), what="unlock checks"):
            return Check(Outcome.LOCKED, Scope.EVERYONE, 1)
        if not _matches(link_id, password, encoded):
            quick_call(lambda client: _fail(client, by_address, by_link), what="unlock failures")
            return Check(Outcome.WRONG)
        quick_call(lambda client: client.delete(by_address), what="unlock failures")
    except RedisUnavailable:
        return Check(Outcome.UNAVAILABLE)
    return Check(Outcome.RIGHT)


def _lockout(client, by_address: str, by_link: str) -> Check | None:
    pipe = client.pipeline(transaction=False)
    for key in (by_address, by_link):
        pipe.get(key)
        pipe.ttl(key)
    address_failures, address_ttl, link_failures, link_ttl = pipe.execute()
    if int(address_failures or 0) >= settings.LINK_UNLOCK_FAILURE_LIMIT:
        return Check(Outcome.LOCKED, Scope.ADDRESS, max(address_ttl, 1))
    if int(link_failures or 0) >= settings.LINK_UNLOCK_LINK_FAILURE_LIMIT:
        return Check(Outcome.LOCKED, Scope.LINK, max(link_ttl, 1))
    return None


def _take_budget(client, cost: int) -> bool:
    """Adds `cost` to this second's checks; whether they were under the
    budget before it (so that one costly check fits in an empty second)."""
    key = f"{CHECKS_KEY_PREFIX}{int(time.time())}"
    pipe = client.pipeline(transaction=True)
    pipe.incrby(key, cost)
    pipe.expire(key, 2)
    total, _ = pipe.execute()
    return total - cost < settings.LINK_UNLOCK_CHECKS_PER_SECOND


def _fail(client, by_address: str, by_link: str) -> None:
    cooloff = settings.LINK_UNLOCK_COOLOFF_MINUTES * 60
    pipe = client.pipeline(transaction=True)
    for key in (by_address, by_link):
        pipe.incr(key)
        pipe.expire(key, cooloff)
    pipe.execute()


def _matches(link_id: int, password: str, encoded: str) -> bool:
    # A lone surrogate (typed bytes that are not UTF-8, as json.loads reads them)
    # is in no password set: the hasher could not even encode it.
    if not encoded or len(password) > PASSWORD_MAX_LENGTH or unstorable(password):
        return False

    def rehash(raw: str) -> None:
        # Only if the password is still the one checked. The same salt, so the
        # same version of the password for the edge (publishing.password_version):
        # the pass this right password gets still serves, and nothing is published.
        Link.objects.filter(pk=link_id, password=encoded).update(password=rehashed(raw, encoded))

    return check_password(password, encoded, setter=rehash, preferred=HASHER)


def rehashed(raw: str, encoded: str) -> str:
    """`raw`, the password `encoded` hashes, hashed by the link hasher with
    the salt of `encoded` where it has one that the link hasher can take."""
    salt = password_salt(encoded)
    if salt == encoded or not salt or any(char not in RANDOM_STRING_CHARS for char in salt):
        return hash_password(raw)
    return HASHER.encode(raw, salt)

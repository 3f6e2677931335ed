"""Links with a password: the edge sends their visitors to the dashboard's
unlock page (web.views.link_unlock), which checks the password here.

The right password lets the visitor through, records exactly one click as
the edge would have (the click stream, docs/contract.md, with the link's
id), and counts the visit against max_visits the way the edge counts
others. Wrong passwords are counted per link and address in Redis;
LINK_UNLOCK_FAILURE_LIMIT of them lock that address out of that link for
LINK_UNLOCK_COOLOFF_MINUTES. While Redis does not answer nobody is let in:
a failure count that cannot be kept must not let guesses through.
"""

import enum
import secrets
import time
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.hashers import check_password

from clicks.records import encode_entry
from slingshot.contract import CLICKS_STREAM, visits_key

from .models import Link
from .redis import RedisUnavailable, quick_call
from .selectors import LinkState, link_state

UA_MAX = 512
REFERER_MAX = 1024


class Outcome(enum.StrEnum):
    UNLOCKED = "unlocked"
    WRONG = "wrong"
    LOCKED_OUT = "locked_out"  # too many wrong passwords from this address
    GONE = "gone"  # expired, or every visit it was made for served
    NOT_FOUND = "not_found"  # disabled or scheduled: as the edge answers them
    UNAVAILABLE = "unavailable"  # Redis did not answer


@dataclass(frozen=True)
class Unlock:
    outcome: Outcome
    target: str = ""  # where to send the visitor, when UNLOCKED


def failures_key(link: Link, address: str) -> str:
    return f"slingshot:unlock-failures:{link.pk}:{address}"


def link_unlock(*, link: Link, password: str, address: str | None, user_agent: str = "", referer: str = "") -> Unlock:
    """Checks `password` for a visitor at `address`; on success records the
    click and answers the target."""
    address = address or "unknown"
    state = link_state(link)
    if state in (LinkState.DISABLED, LinkState.SCHEDULED):
        return Unlock(Outcome.NOT_FOUND)
    if state is LinkState.EXPIRED:
        return Unlock(Outcome.GONE)
    key = failures_key(link, address)
    try:
        failures = int(quick_call(lambda client: client.get(key), what="unlock failures") or 0)
        if failures >= settings.LINK_UNLOCK_FAILURE_LIMIT:
            return Unlock(Outcome.LOCKED_OUT)
        if not link.password or not check_password(password, link.password):
            cooloff = settings.LINK_UNLOCK_COOLOFF_MINUTES * 60

            def fail(client):
                pipe = client.pipeline(transaction=True)
                pipe.incr(key)
                pipe.expire(key, cooloff)
                pipe.execute()

            quick_call(fail, what="unlock failures")
            return Unlock(Outcome.WRONG)
        if link.max_visits:
            served = quick_call(lambda client: client.incr(visits_key(link.pk)), what="visit counter")
            if served > link.max_visits:
                return Unlock(Outcome.GONE)
        record_click(link, address=address, user_agent=user_agent, referer=referer)
    except RedisUnavailable:
        return Unlock(Outcome.UNAVAILABLE)
    return Unlock(Outcome.UNLOCKED, target=link.url)


def record_click(link: Link, *, address: str, user_agent: str, referer: str) -> None:
    """Appends one click on the link to the click stream, as the edge writes
    them: an entry of its own, with a random id prefix."""
    click = {
        "ts": int(time.time() * 1000),
        "slug": link.slug,
        "link": link.pk,
        "ip": address,
        "ua": _one_line(user_agent)[:UA_MAX],
        "ref": _one_line(referer)[:REFERER_MAX],
    }
    fields = encode_entry(secrets.token_hex(8), 0, [click])
    quick_call(lambda client: client.xadd(CLICKS_STREAM, fields), what="click stream")


def _one_line(value: str) -> str:
    # A header cannot hold a line feed; a value that does would break the record.
    return value.replace("\n", " ").replace("\r", " ")

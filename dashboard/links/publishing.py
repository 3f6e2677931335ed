"""Publishing links to Redis in the format docs/contract.md defines:
what a link's and a domain's values are, and making Redis agree with
PostgreSQL about some of them (publish_keys), with one change notification
each. Changes reach it through the outbox (links/outbox.py,
links/delivery.py).
"""

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import redis
from django.conf import settings
from django.contrib.auth.hashers import identify_hasher
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.crypto import salted_hmac

from slingshot.contract import (
    APP_FILES,
    DOMAINS_KEY,
    LINK_CHANGES_MAXLEN,
    LINK_CHANGES_STREAM,
    app_file_key,
    link_key,
    robots_key,
)
from slingshot.redis import RedisNotAtFault, get_redis

from .app_files import AASA, ASSETLINKS, served
from .fields import PUBLISHED
from .models import PREVIEW_IMAGE_PREFIX, Domain, Link
from .validation import default_host

log = logging.getLogger(__name__)

_PASSWORD_VERSION_SALT = "slingshot.links.password_version"


def legacy_unlock_url() -> str:
    """What a link with a password carries for edges older than their own
    password pages, which send its visitors there: a dashboard page that
    asks them to come back in a minute, the same for every link
    (web.link_views.link_unlock_moved). Never the link's target: an older edge
    must not serve the link without its password (docs/contract.md, "Upgrading")."""
    return settings.DASHBOARD_BASE_URL.rstrip("/") + reverse("web:link-unlock-moved", args=[""])


def password_version(encoded: str) -> str | None:
    """The version of a link's password that the edge binds a pass through
    it to (docs/contract.md, "Password checks"); None without a password. An
    HMAC of the salt of the password's hash with a key of the dashboard's:
    it tells nothing of the password; each password set is hashed with a
    salt of its own, so the version changes with every password set, the
    same one set again too, and a pass taken before no longer serves; and a
    hash made again at a right password keeps its salt
    (links.unlocking.rehashed), so the pass that password gave serves on."""
    if not encoded:
        return None
    return salted_hmac(_PASSWORD_VERSION_SALT, password_salt(encoded), algorithm="sha256").hexdigest()[:32]


def password_salt(encoded: str) -> str:
    """The salt of a password's hash (the whole hash where its hasher keeps none)."""
    try:
        return identify_hasher(encoded).decode(encoded)["salt"]
    except (ValueError, KeyError, TypeError):
        return encoded


def link_payload(link: Link) -> str:
    """The value of the link's key (docs/contract.md, "Links"): its id, and
    each option the edge is told of, as links/fields.py says. A value
    refused since it was saved (a target on a domain blocklisted since, say)
    has the link published disabled: the edge answers it as unknown; one
    flagged as listed (Link.listed) is published `listed`, and the edge
    answers 451 or warns; one stopped by the staff, `blocked`. A
    password never leaves PostgreSQL: the edge is only told that there is
    one, and asks the dashboard whether what a visitor typed is it."""
    payload, refused = {"id": link.pk}, []
    for option in PUBLISHED:
        value = getattr(link, option.name)
        try:
            payload[option.edge] = option.to_edge(value)
        except ValidationError as exc:
            refused.append(f"{option.name}: {'; '.join(exc.messages)}")
            payload[option.edge] = value if isinstance(value, str) else []
    if link.preview_image:
        # An uploaded image stands before preview_image_url; the edge serves it.
        payload["preview_image"] = PREVIEW_IMAGE_PREFIX + link.preview_image
    if link.blocked_at is not None:
        # Stopped by the staff (moderation/): a 451 with their words; an
        # edge older than `blocked` reads `active` and answers 404.
        payload["blocked"], payload["active"] = link.blocked or settings.MODERATION_BLOCKED_TEXT, False
    if link.listed:
        # On a blocklist since it was made (links/flags.py): the edge answers
        # 451, or a warning page (SCREEN_ACTION=warn); an edge older than
        # `listed` reads `active` and answers 404.
        payload["listed"] = "warn" if settings.SCREEN_ACTION == "warn" else True
        payload["active"] = False
    elif refused:
        log.warning("link %s is published disabled, refused now: %s", link.slug, " / ".join(refused))
        payload["active"] = False
    payload["password_version"] = password_version(link.password)
    payload["unlock_url"] = legacy_unlock_url() if link.password else None
    return json.dumps(payload, separators=(",", ":"))


def app_files_of(domain: Domain) -> dict[str, str | None]:
    """The domain's app-link files as the edge serves them (None: none), by name."""
    return {AASA: served(domain.apple_app_site_association), ASSETLINKS: served(domain.assetlinks)}


def domain_payload(domain: Domain) -> str:
    """The value of a domain's field of slingshot:domains (docs/contract.md, "Domains")."""
    return json.dumps(
        {
            "default": domain.is_default,
            "root_url": domain.root_url or None,
            "not_found_url": domain.not_found_url or None,
            "expired_url": domain.expired_url or None,
            "https_redirect": domain.https_redirect,
        },
        separators=(",", ":"),
    )


# The option whose links a domain's robots.txt allows (links/fields.py).
ROBOTS_OPTION = "crawlable"


def in_robots(link: Link | Mapping[str, Any]) -> bool:
    """Whether the link (or its values, as a mapping) is allowed in its domain's robots.txt."""
    return bool(link[ROBOTS_OPTION] if isinstance(link, Mapping) else getattr(link, ROBOTS_OPTION))


def robots_txt(domain: Domain) -> str:
    """The domain's robots.txt: the links in_robots allowed, every other path not."""
    listed = Link.objects.filter(domain=domain, **{ROBOTS_OPTION: True})
    slugs = listed.order_by("slug").values_list("slug", flat=True)
    return "\n".join(["User-agent: *", *(f"Allow: /{slug}$" for slug in slugs), "Disallow: /", ""])


Key = tuple[str, str]  # (a domain's host, a slug): a link; (a host, ""): the domain itself


def redis_link_key(host: str, slug: str, default: str) -> str:
    return link_key(slug, None if host == default else host)


# The links of some slugs, with their domain's host: written once, not
# compiled by the ORM at every delivery (a request makes one per create).
_LINKS_BY_SLUG = (
    f"SELECT l.*, d.host AS domain_host FROM {Link._meta.db_table} l"
    f" JOIN {Domain._meta.db_table} d ON d.id = l.domain_id WHERE l.slug = ANY(%s)"
)


# Where Redis keeps, for a while, the outbox id of the last change it took
# of each link (`<host>/<slug>`): the dashboard's own, read by nothing else
# (docs/contract.md, "Change versions").
VERSION_KEY_PREFIX = "slingshot:published:"
# Far longer than a delivery takes between reading PostgreSQL (or
# committing) and writing Redis: links/delivery.py gives up on a delivery
# that took a tenth of it.
VERSION_TTL_SECONDS = 600

# A link's change, applied only if Redis has taken none newer of its key:
# the request that made a change and the publisher may deliver it at once,
# and in either order. KEYS: the version key, the link's key, the change
# stream. ARGV: the version (an outbox id), its TTL, the link's value (""
# for none), the stream's MAXLEN, then the change entry's fields.
_APPLY = """
local seen = redis.call('GET', KEYS[1])
if seen and tonumber(seen) >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if ARGV[3] == '' then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], ARGV[3]) end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', unpack(ARGV, 5))
return 1
"""


def version_key(host: str, slug: str) -> str:
    return f"{VERSION_KEY_PREFIX}{host}/{slug}"


def publish_keys(
    keys: Iterable[Key],
    *,
    client: redis.Redis | None = None,
    links: Mapping[Key, Any] | None = None,
    values: Mapping[Key, str | None] | None = None,
    versions: Mapping[Key, int] | None = None,
    stale_after: float | None = None,
) -> int:
    """Makes Redis agree with PostgreSQL about these links and domains
    (write or delete), with one change notification each, in one MULTI/EXEC.
    `links`: the links of the keys, read already (links/delivery.py), each
    a Link or what link_payload reads of one; a key it lacks has no link.
    `values`: link values made already (link_payload's; None: no link), for
    the keys it has. `versions`: the outbox id of each link's change, which
    is then taken only if Redis has taken no newer change of the link
    (_APPLY), and notified only if taken; `stale_after`: the monotonic time
    after which what was read for them is not sent (StaleDelivery), since a
    version Redis kept meanwhile may have expired. Returns how many keys it
    was given."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return 0
    values = values or {}
    default = default_host()
    # Only the queries the keys need, unordered: the publisher runs this for
    # every few links created, and compiling a query costs more than running it.
    slugs = {slug for host, slug in keys if slug and (host, slug) not in values}
    hosts = {host for host, slug in keys if not slug}
    if links is None:
        found = Link.objects.raw(_LINKS_BY_SLUG, [list(slugs)]) if slugs else ()
        links = {(link.domain_host, link.slug): link for link in found}
    domains = {domain.host: domain for domain in Domain.objects.filter(host__in=hosts).order_by()} if hosts else {}

    def value_of(key: Key) -> str | None:
        if key in values:
            return values[key]
        link = links.get(key)
        return None if link is None else link_payload(link)

    def fill(pipe) -> None:
        for host, slug in keys:
            if not slug:
                _fill_domain(pipe, host, domains.get(host))
                continue
            key, value = redis_link_key(host, slug, default), value_of((host, slug))
            change = {"slug": slug} if host == default else {"slug": slug, "domain": host}
            if versions is not None:
                fields = [item for pair in change.items() for item in pair]
                pipe.eval(
                    _APPLY,
                    3,
                    version_key(host, slug),
                    key,
                    LINK_CHANGES_STREAM,
                    versions[host, slug],
                    VERSION_TTL_SECONDS,
                    value or "",
                    LINK_CHANGES_MAXLEN,
                    *fields,
                )
                continue
            if value is None:
                pipe.delete(key)
            else:
                pipe.set(key, value)
            pipe.xadd(LINK_CHANGES_STREAM, change, maxlen=LINK_CHANGES_MAXLEN, approximate=True)

    if stale_after is not None and time.monotonic() > stale_after:
        raise StaleDelivery("a delivery stalled between reading PostgreSQL and writing Redis: read again")
    send_replicated(client or get_redis(), fill)
    return len(keys)


def _fill_domain(pipe, host: str, domain: Domain | None) -> None:
    """A domain's value, robots.txt and app files written (None: deleted),
    and its change notified."""
    if domain is None:
        pipe.hdel(DOMAINS_KEY, host)
        pipe.delete(robots_key(host), *(app_file_key(name, host) for name in APP_FILES))
    else:
        pipe.hset(DOMAINS_KEY, host, domain_payload(domain))
        pipe.set(robots_key(host), robots_txt(domain))
        for name, text in app_files_of(domain).items():
            if text is None:
                pipe.delete(app_file_key(name, host))
            else:
                pipe.set(app_file_key(name, host), text)
    pipe.xadd(LINK_CHANGES_STREAM, {"domain": host}, maxlen=LINK_CHANGES_MAXLEN, approximate=True)


class StaleDelivery(RedisNotAtFault):
    """What a delivery read is too old to write: it is read again (the
    caller keeps its outbox rows)."""


class NotReplicated(RedisNotAtFault):
    """Fewer replicas than REDIS_WAIT_REPLICAS confirmed a write in time."""


def send_replicated(client: redis.Redis, fill: Callable[[redis.client.Pipeline], None]) -> None:
    """Runs the commands `fill` queues in one MULTI/EXEC, in one round trip.
    With REDIS_WAIT_REPLICAS, a WAIT on the same connection follows, and
    fewer replicas than that confirming in REDIS_WAIT_TIMEOUT_MS raises:
    the caller keeps its outbox rows, and a change a failover could lose is
    sent again, to the new primary."""
    wanted = settings.REDIS_WAIT_REPLICAS
    pipe = client.pipeline(transaction=False)
    pipe.execute_command("MULTI")
    fill(pipe)
    pipe.execute_command("EXEC")
    if wanted > 0:
        pipe.execute_command("WAIT", wanted, settings.REDIS_WAIT_TIMEOUT_MS)
    replies = pipe.execute()
    exec_reply = replies[-2] if wanted > 0 else replies[-1]
    for reply in exec_reply:
        if isinstance(reply, Exception):
            raise reply
    if wanted > 0 and replies[-1] < wanted:
        raise NotReplicated(f"{replies[-1]} of {wanted} replicas confirmed link changes in time")

"""Links: where the edge serves them and people reach the dashboard, what a
link may be, how its password is checked, and how its changes reach Redis."""

from django.core.exceptions import ImproperlyConfigured

from .environment import env, rate

# Where short links are served; used for short URLs and to refuse targets
# that would loop back to the edge.
EDGE_BASE_URL = env.str("EDGE_BASE_URL", default="http://127.0.0.1:{}".format(env.int("EDGE_PORT", default=8080)))

# Where people reach the dashboard. Edges older than password pages of their
# own send the visitors of a link with a password here (links.publishing).
DASHBOARD_BASE_URL = env.str(
    "DASHBOARD_BASE_URL", default="http://127.0.0.1:{}".format(env.int("DASHBOARD_PORT", default=8000))
)

LINK_URL_MAX_LENGTH = env.int("LINK_URL_MAX_LENGTH", default=2048)
LINK_SLUG_LENGTH = env.int("LINK_SLUG_LENGTH", default=7)
# The largest image a link's preview may upload (links/preview_images.py), in bytes.
PREVIEW_IMAGE_MAX_BYTES = env.int("PREVIEW_IMAGE_MAX_BYTES", default=1024 * 1024)
# Targets on these domains (and their subdomains) are refused, e.g. "evil.example,spam.example".
LINK_DOMAIN_BLOCKLIST = env.list("LINK_DOMAIN_BLOCKLIST", default=[])
# Links one team may make: e.g. "600/min"; empty, no limit; and one API
# token, by default as many (links/limits.py). The importers and the admin
# are not counted.
LINK_CREATE_RATE = rate("LINK_CREATE_RATE", "")
LINK_CREATE_TOKEN_RATE = rate("LINK_CREATE_TOKEN_RATE", "") or LINK_CREATE_RATE
# Blocklists a destination is screened against at every door, and
# allowlists that win over them (screening/): files or http(s) URLs,
# `name=source` or `source`, comma-separated; read again every
# SCREEN_REFRESH_MINUTES by `manage.py screen_lists`.
SCREEN_LISTS = env.list("SCREEN_LISTS", default=[])
SCREEN_ALLOWLIST = env.list("SCREEN_ALLOWLIST", default=[])
SCREEN_REFRESH_MINUTES = env.float("SCREEN_REFRESH_MINUTES", default=60.0)
# What the edge does with a link whose destination is listed after it was
# made: "block" (a 451 page) or "warn" (a warning page with a way on).
SCREEN_ACTION = env.str("SCREEN_ACTION", default="block")
if SCREEN_ACTION not in ("block", "warn"):
    raise ImproperlyConfigured(f"SCREEN_ACTION is {SCREEN_ACTION!r}: it is block or warn")
# Reports of short URLs (a short domain's /report page, moderation/): how
# many one address may send, and the words of the 451 page of a link the
# staff stopped when they give none.
REPORT_RATE = rate("REPORT_RATE", "5/hour")
MODERATION_BLOCKED_TEXT = env.str("MODERATION_BLOCKED_TEXT", default="")
# Lookups beside the lists (screening/lookups.py), each off unless set:
# Google Safe Browsing's Lookup API, and DNS blocklist zones (Spamhaus DBL:
# "dbl.spamhaus.org") asked through SCREEN_DNS_RESOLVER ("host:port"; the
# system's resolver unless set); each lookup waits at most
# SCREEN_LOOKUP_TIMEOUT_MS, then lets the destination through.
SAFE_BROWSING_API_KEY = env.str("SAFE_BROWSING_API_KEY", default="")
SAFE_BROWSING_URL = env.str("SAFE_BROWSING_URL", default="https://safebrowsing.googleapis.com/v4/threatMatches:find")
SCREEN_DNSBL_ZONES = env.list("SCREEN_DNSBL_ZONES", default=[])
SCREEN_DNS_RESOLVER = env.str("SCREEN_DNS_RESOLVER", default="")
SCREEN_LOOKUP_TIMEOUT_MS = env.int("SCREEN_LOOKUP_TIMEOUT_MS", default=1500)
# How often `manage.py screen_lists` asks the lookups about every active
# link again (links/flags.py relookup_links); 0: never.
SCREEN_RELOOKUP_HOURS = env.float("SCREEN_RELOOKUP_HOURS", default=24.0)
# Every LINK_HEALTH_HOURS `manage.py check_links` asks each active link's
# destination whether it still answers (health/); 0: never. One request to a
# host at most every LINK_HEALTH_HOST_INTERVAL seconds (counted from the end of
# the one before), each within
# LINK_HEALTH_TIMEOUT seconds; public addresses only, unless
# LINK_HEALTH_ALLOW_PRIVATE (for tests, or destinations on the operator's network).
LINK_HEALTH_HOURS = env.float("LINK_HEALTH_HOURS", default=24.0)
LINK_HEALTH_HOST_INTERVAL = env.float("LINK_HEALTH_HOST_INTERVAL", default=1.0)
LINK_HEALTH_TIMEOUT = env.float("LINK_HEALTH_TIMEOUT", default=5.0)
LINK_HEALTH_ALLOW_PRIVATE = env.bool("LINK_HEALTH_ALLOW_PRIVATE", default=False)
# Wrong passwords of a link from one address before that address is locked
# out of that link, from all addresses before the link is locked for
# everyone, and for how long after the last one (links/unlocking.py).
LINK_UNLOCK_FAILURE_LIMIT = env.int("LINK_UNLOCK_FAILURE_LIMIT", default=5)
LINK_UNLOCK_LINK_FAILURE_LIMIT = env.int("LINK_UNLOCK_LINK_FAILURE_LIMIT", default=30)
LINK_UNLOCK_COOLOFF_MINUTES = env.int("LINK_UNLOCK_COOLOFF_MINUTES", default=15)
# Link password checks per second, all visitors and workers together (each
# about 5 ms of CPU): more wait a second, so guesses cannot starve the dashboard.
LINK_UNLOCK_CHECKS_PER_SECOND = env.int("LINK_UNLOCK_CHECKS_PER_SECOND", default=50)
# What the edges show to ask the dashboard whether a link's password is right
# (web/edge_calls.py); empty: nobody is let through a password.
EDGE_DASHBOARD_SECRET = env.str("EDGE_DASHBOARD_SECRET", default="")
# Deliver link changes to Redis from the request that made them, after its
# commit and before it answers, as well as from the publisher process, so
# that a link is served once its create has answered; trying for at most
# LINK_LIVE_TIMEOUT_MS (links/delivery.py), then answering that it is
# pending. Off: the publisher alone delivers, and a link goes live a moment after.
LINK_PUBLISH_INLINE = env.bool("LINK_PUBLISH_INLINE", default=True)
LINK_LIVE_TIMEOUT_MS = env.int("LINK_LIVE_TIMEOUT_MS", default=500)

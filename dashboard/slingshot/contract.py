"""The names the dashboard and the edge share in Redis (docs/contract.md).

Every tier takes them from here (the edge from `edge/slingshot/contract.lua`);
`edge/t/test_contract.py` holds both against the document. A click entry's
record format is declared in click_record.toml (slingshot.click_record).
"""

from slingshot.click_record import RECORD

LINK_KEY_PREFIX = "slingshot:link:"
# Every domain's settings, a JSON value per host; and each domain's robots.txt.
DOMAINS_KEY = "slingshot:domains"
ROBOTS_KEY_PREFIX = "slingshot:robots:"
# A domain's app-link files (/.well-known/<name>): `<prefix><name>:<host>`.
APP_FILE_KEY_PREFIX = "slingshot:appfile:"
APP_FILES = ("apple-app-site-association", "assetlinks.json")
LINK_CHANGES_STREAM = "slingshot:link-changes"
# A counter per link with a visit limit: the redirects the edge has let through.
VISITS_KEY_PREFIX = "slingshot:visits:"
# Change notifications are only hints to evict a cached copy: the stream is capped.
LINK_CHANGES_MAXLEN = 100_000

CLICKS_STREAM = "slingshot:clicks"
CLICKS_GROUP = "importers"
DEAD_LETTER_STREAM = "slingshot:clicks:dead"
# A hash per UTC hour (its start in Unix seconds after the prefix) of the
# clicks the edges recorded, fields `redirect` and `orphan` (clicks.accounting).
SERVED_KEY_PREFIX = "slingshot:served:"
SERVED_FIELDS = ("redirect", "orphan")
# The `v` field of a click entry: the record format the importer reads.
CLICK_RECORD_VERSION = RECORD.version
# What an orphan visit found (record format 5): no link, or a link not served.
ORPHAN_KINDS = RECORD.kinds

# A visitor's one-time pass through a link's password, made by the edge
# that checked it and taken by the edge that serves the link (docs/contract.md).
UNLOCK_KEY_PREFIX = "slingshot:unlock:"

# Paths the edge answers itself (nginx.conf's `location =` blocks): never slugs.
EDGE_PATHS = ("healthz", "metrics", "report", "robots.txt", "yourls-api.php")


def link_key(slug: str, host: str | None = None) -> str:
    """The key of a link: the slug alone on the default domain (host None),
    else after its domain's host and a slash."""
    return f"{LINK_KEY_PREFIX}{host}/{slug}" if host else LINK_KEY_PREFIX + slug


def robots_key(host: str) -> str:
    return ROBOTS_KEY_PREFIX + host


def app_file_key(name: str, host: str) -> str:
    return f"{APP_FILE_KEY_PREFIX}{name}:{host}"


def visits_key(link_id: int) -> str:
    return f"{VISITS_KEY_PREFIX}{link_id}"

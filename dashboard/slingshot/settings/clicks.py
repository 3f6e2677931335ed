"""Clicks: the importer that moves them from Redis into PostgreSQL
(clicks/, docs/rollups.md), the Redis servers it reads them from, and the
reports and accounting over them."""

import re

from django.core.exceptions import ImproperlyConfigured

from slingshot.release import REPO_DIR

from .environment import env


def _click_stores(raw: str) -> dict[str, str]:
    stores = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        name, _, url = item.partition("=")
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,39}", name) or name == "primary" or name in stores:
            raise ImproperlyConfigured(f"CLICK_STORES: {name!r} is not a new store name ([a-z0-9_-], not 'primary')")
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ImproperlyConfigured(f"CLICK_STORES: the store {name!r} needs a redis:// URL")
        stores[name] = url
    return stores


# Redis servers the edges write clicks to besides the primary, each read by
# `import_clicks --store NAME`: "edge1=redis://:PASSWORD@10.0.0.5:6379/0,...".
CLICK_STORES = _click_stores(env.str("CLICK_STORES", default=""))

CLICK_IP_PRIVACY = env.str("CLICK_IP_PRIVACY", default="anonymise")  # anonymise | full | none
CLICK_ENRICH = env.bool("CLICK_ENRICH", default=True)
# The country database (MaxMind DB format) the importer and the edge's
# country rules share; data/geo/package.json names the one bin/setup installs.
GEOIP_COUNTRY_DB = env.str("GEOIP_COUNTRY_DB", default=str(REPO_DIR / "data" / "geo" / "country.mmdb"))
CLICK_IMPORT_BATCH_ENTRIES = env.int("CLICK_IMPORT_BATCH_ENTRIES", default=3000)
CLICK_IMPORT_CLAIM_IDLE_MS = env.int("CLICK_IMPORT_CLAIM_IDLE_MS", default=60_000)
CLICK_IMPORT_LINGER_MS = env.int("CLICK_IMPORT_LINGER_MS", default=250)
CLICK_IMPORT_LOG_INTERVAL = env.float("CLICK_IMPORT_LOG_INTERVAL", default=10.0)
CLICK_PARTITIONS_AHEAD = env.int("CLICK_PARTITIONS_AHEAD", default=3)
CLICK_RETENTION_MONTHS = env.int("CLICK_RETENTION_MONTHS", default=0)  # 0: keep raw clicks forever

# A team's visits past its retention (Team.visit_retention_days, clicks/retention.py):
# `keep` deletes its raw clicks and keeps its rollups, so that its reports
# by day go on counting them; `purge` deletes their hour, day and month
# rollups too (the accounting then shows those hours as purged).
CLICK_RETENTION_ROLLUPS = env.str("CLICK_RETENTION_ROLLUPS", default="keep")
if CLICK_RETENTION_ROLLUPS not in ("keep", "purge"):
    raise ImproperlyConfigured(f"CLICK_RETENTION_ROLLUPS must be keep or purge, not {CLICK_RETENTION_ROLLUPS!r}")
# Rows a purge deletes per transaction, and how often the importer looks for visits to purge.
CLICK_PURGE_BATCH_ROWS = env.int("CLICK_PURGE_BATCH_ROWS", default=5000)
CLICK_PURGE_EVERY_MINUTES = env.int("CLICK_PURGE_EVERY_MINUTES", default=60)
if CLICK_PURGE_BATCH_ROWS < 1 or CLICK_PURGE_EVERY_MINUTES < 1:
    raise ImproperlyConfigured("CLICK_PURGE_BATCH_ROWS and CLICK_PURGE_EVERY_MINUTES must be 1 or more")

# Reports under filters (clicks/reports.py, clicks/report_queries.py): the breakdowns count the
# latest this many matching raw clicks, and a statement of the raw clicks
# is cancelled after this many milliseconds, its report refused.
REPORT_FILTER_SAMPLE = env.int("REPORT_FILTER_SAMPLE", default=50_000)
REPORT_RAW_TIMEOUT_MS = env.int("REPORT_RAW_TIMEOUT_MS", default=3000)
# Every click accounted for (clicks/accounting.py): how long after an hour
# ends a difference between the clicks the edges served and those stored is
# still waiting for the importer, before the overview flags it.
ACCOUNTING_GRACE_MINUTES = env.int("ACCOUNTING_GRACE_MINUTES", default=15)

# Where the importer stores clicks: "postgresql", or "clickhouse" (docs/scale-out.md,
# "ClickHouse"): every node of the cluster,
# "clickhouse://user:password@host:9000/database,...", which `migrate_clicks`
# brings to the schema of sql/clickhouse/, and the cluster's name in their
# <remote_servers>.
CLICK_STORE = env.str("CLICK_STORE", default="postgresql")
if CLICK_STORE not in ("postgresql", "clickhouse"):
    raise ImproperlyConfigured(f"CLICK_STORE is postgresql or clickhouse, not {CLICK_STORE!r}")
CLICKHOUSE_URLS = [url.strip() for url in env.str("CLICKHOUSE_URLS", default="").split(",") if url.strip()]
CLICKHOUSE_CLUSTER = env.str("CLICKHOUSE_CLUSTER", default="slingshot")
if CLICK_STORE == "clickhouse" and not CLICKHOUSE_URLS:
    raise ImproperlyConfigured("CLICK_STORE=clickhouse needs CLICKHOUSE_URLS")

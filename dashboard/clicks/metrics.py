"""The importer's metrics (`manage.py import_clicks --metrics-port`), in a
registry of its own: what it did, counted as each batch is acknowledged,
and the stream's backlog, read from Redis when Prometheus scrapes."""

import redis
from prometheus_client import CollectorRegistry, Counter

from slingshot.metrics import ScrapeGauges
from slingshot.redis import get_quick_redis

from .importer import BatchResult
from .stream import import_lag


def _lag(client: redis.Redis) -> dict[str, float]:
    lag = import_lag(client=client)
    return {
        "slingshot_importer_backlog_entries": lag.backlog,
        "slingshot_importer_pending_entries": lag.pending,
        "slingshot_importer_oldest_entry_age_seconds": lag.oldest_age_seconds,
    }


class ImporterMetrics:
    """`lag_client`: the click store this importer reads (default: the primary)."""

    def __init__(self, lag_client: redis.Redis | None = None) -> None:
        lag_client = lag_client or get_quick_redis()
        self.registry = CollectorRegistry()
        self.batches = Counter(
            "slingshot_importer_batches_total", "Batches stored and acknowledged.", registry=self.registry
        )
        self.entries = Counter(
            "slingshot_importer_entries_total", "Stream entries acknowledged.", registry=self.registry
        )
        self.clicks_read = Counter(
            "slingshot_importer_clicks_read_total",
            "Clicks read from the stream, orphan visits included.",
            registry=self.registry,
        )
        self.clicks_stored = Counter(
            "slingshot_importer_clicks_stored_total",
            "Clicks stored, each once: a click delivered again is read, not stored.",
            registry=self.registry,
        )
        self.dead_letters = Counter(
            "slingshot_importer_dead_letters_total",
            "Stream entries moved to the dead-letter stream.",
            registry=self.registry,
        )
        self.retries = Counter(
            "slingshot_importer_retries_total",
            "Times the importer lost Redis or PostgreSQL and started again after a pause.",
            registry=self.registry,
        )
        self.registry.register(
            ScrapeGauges(
                read=lambda: _lag(lag_client),
                errors=(redis.RedisError,),
                documentation={
                    "slingshot_importer_backlog_entries": "Stream entries not yet acknowledged, read or not.",
                    "slingshot_importer_pending_entries": "Of those, entries read by an importer and not yet acknowledged.",
                    "slingshot_importer_oldest_entry_age_seconds": "Age of the oldest entry not yet acknowledged; 0 if none.",
                },
                up=("slingshot_importer_redis_up", "1 if Redis answered this scrape's backlog query, else 0."),
            )
        )

    def batch_done(self, result: BatchResult) -> None:
        self.batches.inc()
        self.entries.inc(result.entries)
        self.clicks_read.inc(result.clicks)
        self.clicks_stored.inc(result.stored)
        self.dead_letters.inc(result.dead)

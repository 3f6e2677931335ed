"""The publisher's metrics (`manage.py run_publisher --metrics-port`), in a
registry of its own: changes published and retries, counted by its loop,
and the outbox's depth, read from PostgreSQL when Prometheus scrapes."""

from django.db import DatabaseError, connection
from prometheus_client import CollectorRegistry, Counter

from slingshot.metrics import ScrapeGauges

from .models import LinkOutbox


def _outbox() -> dict[str, float]:
    # Each scrape runs in a thread of its own, with its own connection: closed here.
    try:
        return {"slingshot_publisher_outbox_depth": LinkOutbox.objects.count()}
    finally:
        connection.close()


class PublisherMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.published = Counter(
            "slingshot_publisher_changes_published_total",
            "Outbox rows delivered to Redis (or found there, delivered by their request).",
            registry=self.registry,
        )
        self.retries = Counter(
            "slingshot_publisher_retries_total",
            "Times the publisher lost Redis or PostgreSQL and tried again after a pause.",
            registry=self.registry,
        )
        self.registry.register(
            ScrapeGauges(
                read=_outbox,
                errors=(DatabaseError,),
                documentation={
                    "slingshot_publisher_outbox_depth": (
                        "Link changes in the outbox: not yet delivered to Redis, or delivered by their"
                        " request and left for the publisher's next poll."
                    ),
                },
                up=("slingshot_publisher_database_up", "1 if PostgreSQL answered this scrape's outbox query, else 0."),
            )
        )

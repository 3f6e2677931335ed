"""Click stores besides the primary (CLICK_STORES): the overview's import lag
and the accounting add every store up. The test's second store is another
database of the test Redis."""

from datetime import datetime, timedelta, timezone

import pytest
from django.conf import settings as django_settings

from clicks.accounting import accounts
from clicks.stores import import_lag_of_every_store, quick_store, store_names
from slingshot.contract import CLICKS_GROUP, CLICKS_STREAM, SERVED_KEY_PREFIX
from slingshot.redis import get_redis

pytestmark = pytest.mark.django_db


@pytest.fixture
def edge_store(settings):
    url = f"redis://:{django_settings.REDIS_PASSWORD}@{django_settings.REDIS_HOST}:{django_settings.REDIS_PORT}/7"
    settings.CLICK_STORES = {"edge1": url}
    quick_store.cache_clear()
    store = quick_store("edge1")
    store.flushdb()
    yield store
    store.flushdb()
    quick_store.cache_clear()


def test_the_import_lag_adds_up_every_store(edge_store):
    primary = get_redis()
    primary.delete(CLICKS_STREAM)
    for client, entries in ((primary, 2), (edge_store, 3)):
        client.xgroup_create(CLICKS_STREAM, CLICKS_GROUP, id="0", mkstream=True)
        for _ in range(entries):
            client.xadd(CLICKS_STREAM, {"v": "5", "clicks": ""})
    edge_store.xreadgroup(CLICKS_GROUP, "host2", {CLICKS_STREAM: ">"}, count=1)
    try:
        lag = import_lag_of_every_store(client=primary)
        assert store_names() == ["primary", "edge1"]
        assert (lag.backlog, lag.pending) == (5, 1)
        assert lag.consumers == {"edge1/host2": 1}
    finally:
        primary.delete(CLICKS_STREAM)


def test_the_accounting_adds_up_what_every_store_counted(edge_store):
    now = datetime.now(timezone.utc)
    hour = now.replace(minute=0, second=0, microsecond=0)
    key = SERVED_KEY_PREFIX + str(int(hour.timestamp()))
    primary = get_redis()
    primary.delete(key)
    # An edge before journals added to plain fields; one with them sets a field per journal.
    primary.hset(key, mapping={"redirect": 2, "orphan": 1, "00000000000000aa:redirect": 10})
    edge_store.hset(key, mapping={"redirect": 5, "00000000000000bb:redirect": 3, "00000000000000bb:orphan": 4})
    try:
        (latest, *_) = accounts(client=primary, start=now - timedelta(hours=1), end=now, now=now)
        assert latest.hour == hour
        assert (latest.served_redirects, latest.served_orphans) == (20, 5)
    finally:
        primary.delete(key)

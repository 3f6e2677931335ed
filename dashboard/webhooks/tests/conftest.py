import time

import pytest

from webhooks.delivery import Deliverer

from .receiver import Receiver


@pytest.fixture
def webhook_settings(settings):
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    settings.WEBHOOKS_TIMEOUT_SECONDS = 2.0
    return settings


@pytest.fixture
def receiver():
    started = Receiver().start()
    yield started
    started.stop()


@pytest.fixture
def deliver(webhook_settings):
    """deliver(): claims what is due, sends it and records the outcomes, until nothing is left in flight."""
    deliverer = Deliverer(concurrency=8, per_webhook=4, timeout=2.0, private_addresses=True)

    def run(seconds: float = 10.0) -> int:
        deadline, sent = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            claimed = deliverer.claim()
            sent += deliverer.record(wait=0.05)
            if not claimed and not deliverer.busy():
                sent += deliverer.record()
                break
        return sent

    yield run
    deliverer.close()

import uuid

import pytest
from edge_helpers import PrivateRedis, session_redis

from links import domains, services


@pytest.fixture
def private_redis():
    """A Redis only this test uses, stopped and removed afterwards."""
    server = PrivateRedis().start()
    yield server
    server.cleanup()


@pytest.fixture(scope="session")
def rds():
    return session_redis()


@pytest.fixture
def owner(make_user):
    """A person of this test's own, to own links."""
    return make_user()


@pytest.fixture
def two_domains():
    """Two domains of this test's own; removed (with their links) after it."""
    made = [domains.domain_create(host=f"{name}-{uuid.uuid4().hex[:6]}.example.com") for name in ("go", "to")]
    yield made
    for domain in made:
        for link in domain.links.all():
            services.link_delete(link=link)
        domains.domain_delete(domain=domain)

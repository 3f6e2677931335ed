import pytest
from edge_helpers import PrivateRedis, session_redis


@pytest.fixture
def private_redis():
    """A Redis only this test uses, stopped and removed afterwards."""
    server = PrivateRedis().start()
    yield server
    server.cleanup()


@pytest.fixture(scope="session")
def rds():
    return session_redis()

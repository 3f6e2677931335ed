"""A fixture shared by the importer's tests here and in tests/: each test starts
with an empty click stream and dead-letter stream (import it into a test module)."""
import pytest

from clicks.importer import DEAD_LETTER_STREAM, STREAM
from links.redis import get_redis


@pytest.fixture(autouse=True)
def empty_streams():
    client = get_redis()
    client.delete(STREAM, DEAD_LETTER_STREAM)
    yield
    client.delete(STREAM, DEAD_LETTER_STREAM)

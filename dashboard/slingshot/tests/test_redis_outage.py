"""Requests while Redis hangs (SIGSTOP) or is gone: the API and the pages
answer within a second, /healthz says what is wrong, and the circuit breaker
of slingshot/redis.py keeps the cost to one short timeout now and then."""

import signal
import time
import uuid

import pytest
import redis
from redis.sentinel import MasterNotFoundError
from rest_framework.test import APIClient

from devstack.net import free_port
from devstack.pytest_plugin import SERVERS
from devstack.throwaway import ThrowawayStack
from links.publishing import NotReplicated
from slingshot.redis import CircuitBreaker, RedisUnavailable, breaker, get_quick_redis
from slingshot.release import VERSION
from testing.factories import make_link, make_user
from tokens.services import token_create

from .conftest import request

pytestmark = pytest.mark.django_db(transaction=True)

BUDGET = 1.0  # seconds a request may take while Redis misbehaves


@pytest.fixture(autouse=True)
def fresh_breaker():
    """No state left over from another test's outage, none passed on."""
    breaker.reset()
    get_quick_redis.cache_clear()
    yield
    breaker.reset()
    get_quick_redis.cache_clear()


@pytest.fixture
def frozen_redis():
    """The test run's Redis, stopped in its tracks: connections are accepted
    by the kernel, and nothing ever answers."""
    SERVERS.redis.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        SERVERS.redis.send_signal(signal.SIGCONT)
    wait_until(lambda: _answers(get_quick_redis()), what="Redis to answer again")


@pytest.fixture
def gone_redis(settings):
    """A Redis of this test's own, which it points the settings at, then
    stops; the stack, which can start it again on the same port."""
    stack = ThrowawayStack(prefix="slingshot-redis-")
    stack.start_redis()
    settings.REDIS_PORT, settings.REDIS_PASSWORD = stack.redis_port, stack.redis_password
    get_quick_redis.cache_clear()
    assert get_quick_redis().ping()
    stack.stop_redis()
    try:
        yield stack
    finally:
        stack.cleanup()


def _answers(client: redis.Redis) -> bool:
    try:
        return client.ping()
    except redis.RedisError:
        return False


def wait_until(condition, *, timeout: float = 10.0, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def visitor(client, settings):
    """A staff member (whose overview asks Redis for the import lag) with a
    link and an API token."""
    settings.EDGE_HEALTH_URL = "http://127.0.0.1:9/healthz"  # refused at once: only Redis is on trial here
    user = make_user(is_staff=True)
    settings.LINK_PUBLISH_INLINE = False  # the link is made before the outage; no Redis for it either
    make_link(owner=user, url="https://example.com/outage", slug="o" + uuid.uuid4().hex[:8])
    _, raw = token_create(user=user, name="outage", scope="read")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    client.force_login(user)
    return client, api


def timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def assert_everything_answers_in_time(client, api) -> None:
    for round_ in range(3):  # the first pays the timeout and opens the breaker; the others skip Redis
        response, took = timed(lambda: api.get("/api/v1/links"))
        assert response.status_code == 200 and response.json()["count"] == 1, response.content
        assert took < BUDGET, f"API: {took:.2f}s (round {round_})"
        for path in ("/", "/links/"):
            response, took = timed(lambda path=path: client.get(path))
            assert response.status_code == 200, (path, response.status_code)
            assert took < BUDGET, f"{path}: {took:.2f}s (round {round_})"
        overview = client.get("/")
        assert overview.context["lag_error"] and b"Redis unavailable" in overview.content


def test_api_and_pages_answer_within_a_second_while_redis_hangs(visitor, frozen_redis):
    assert_everything_answers_in_time(*visitor)
    assert breaker.is_open


def test_api_and_pages_answer_within_a_second_while_redis_is_down(visitor, gone_redis):
    assert_everything_answers_in_time(*visitor)


def test_a_request_uses_redis_as_soon_as_it_is_back_from_a_refusing_outage(
    visitor, gone_redis, settings, caplog, monkeypatch
):
    """A Redis that refuses connections (stopped, or a primary killed until a
    Sentinel promotes another) costs a request no wait: each call to it
    fails in a small part of REDIS_REQUEST_TIMEOUT, the breaker stays
    closed, and the first request after it is back uses it, within the
    cooldown (60 s here) a failure that waited would open. What the
    request spends on Redis is timed, not the whole page, whose rendering
    a loaded machine stretches."""
    client, _ = visitor
    settings.REDIS_REQUEST_COOLDOWN = 60
    on_redis = []
    call = breaker.call

    def timed_call(operation, *, what):
        started = time.monotonic()
        try:
            return call(operation, what=what)
        finally:
            on_redis.append(time.monotonic() - started)

    monkeypatch.setattr(breaker, "call", timed_call)
    for _ in range(2):
        on_redis.clear()
        response = client.get("/")
        assert response.context["lag_error"] and on_redis
        assert max(on_redis) < settings.REDIS_REQUEST_TIMEOUT / 5, on_redis
        assert not breaker.is_open
    assert sum("at once, so requests go on asking it" in r.getMessage() for r in caplog.records) == 1
    gone_redis.start_redis()
    assert client.get("/").context.get("lag") is not None
    assert "Redis answers again" in caplog.text


def test_the_overview_shows_the_import_lag_once_redis_answers_again(visitor, frozen_redis, settings):
    client, _ = visitor
    assert client.get("/").context.get("lag") is None
    SERVERS.redis.send_signal(signal.SIGCONT)
    settings.REDIS_REQUEST_COOLDOWN = 0.1  # the probe that closes the breaker comes sooner
    wait_until(lambda: client.get("/").context.get("lag") is not None, what="the overview to show the lag")
    assert not breaker.is_open


def test_healthz(client):
    response = client.get("/healthz")
    assert (response.status_code, response.content) == (200, f"ok\nversion: {VERSION}\n".encode())
    assert response["Content-Type"].startswith("text/plain")
    assert response["Slingshot-Version"] == VERSION


def test_healthz_answers_503_within_a_second_while_redis_hangs(client, frozen_redis):
    for _ in range(2):  # the health check asks Redis every time, breaker or not
        response, took = timed(lambda: client.get("/healthz"))
        assert response.status_code == 503 and response.content == f"redis: TimeoutError\nversion: {VERSION}\n".encode()
        assert took < BUDGET


def test_healthz_answers_503_without_secrets_while_redis_is_down(client, gone_redis, settings):
    response, took = timed(lambda: client.get("/healthz"))
    assert response.status_code == 503 and response.content == f"redis: ConnectionError\nversion: {VERSION}\n".encode()
    assert took < BUDGET
    assert settings.REDIS_PASSWORD.encode() not in response.content


def test_healthz_names_postgresql_when_it_does_not_answer(make_dashboard):
    nowhere = f"postgres://slingshot:not-the-password@127.0.0.1:{free_port()}/slingshot"
    port = make_dashboard({"DATABASE_URL": nowhere}, workers=1)
    request(port, "/healthz")  # the first waits for the worker to boot
    response, took = timed(lambda: request(port, "/healthz"))
    assert (response.status, response.body) == (503, f"postgresql: OperationalError\nversion: {VERSION}\n".encode())
    assert took < BUDGET


# --- the circuit breaker alone, on a clock of its own -----------------------------------


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fail():
    raise redis.TimeoutError("Timeout reading from socket")


def test_the_breaker_skips_redis_for_the_cooldown_after_a_failure_then_probes():
    clock = Clock()
    calls = []
    tripped = CircuitBreaker(cooldown=lambda: 5.0, slow=lambda: 0.125, clock=clock)
    assert tripped.call(lambda: calls.append("a") or "a", what="t") == "a"

    with pytest.raises(RedisUnavailable, match="TimeoutError"):
        tripped.call(lambda: calls.append("b") or fail(), what="t")
    assert tripped.is_open
    clock.now += 4.9
    with pytest.raises(RedisUnavailable, match="skipped"):
        tripped.call(lambda: calls.append("c"), what="t")
    assert calls == ["a", "b"]  # the skipped call never reached Redis

    clock.now += 0.2  # past the cooldown: one probe goes through, and fails
    with pytest.raises(RedisUnavailable, match="TimeoutError"):
        tripped.call(lambda: calls.append("d") or fail(), what="t")
    clock.now += 1.0
    with pytest.raises(RedisUnavailable, match="skipped"):
        tripped.call(lambda: calls.append("e"), what="t")

    clock.now += 5.0  # the next probe succeeds and closes it
    assert tripped.call(lambda: calls.append("f") or "f", what="t") == "f"
    assert not tripped.is_open
    assert tripped.call(lambda: calls.append("g") or "g", what="t") == "g"
    assert calls == ["a", "b", "d", "f", "g"]


def test_a_failure_that_cost_no_wait_fails_its_call_and_opens_nothing():
    clock = Clock()
    calls = []
    tripped = CircuitBreaker(cooldown=lambda: 5.0, slow=lambda: 0.125, clock=clock)

    def refused():
        calls.append("refused")
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    def sentinels_waited_on():  # each Sentinel timed out: redis-py says no primary was found
        calls.append("waited")
        clock.now += 0.2
        raise MasterNotFoundError("No master found for 'slingshot'")

    for _ in range(2):
        with pytest.raises(RedisUnavailable, match="ConnectionError"):
            tripped.call(refused, what="t")
        assert not tripped.is_open
    with pytest.raises(RedisUnavailable, match="MasterNotFoundError"):
        tripped.call(sentinels_waited_on, what="t")
    assert tripped.is_open
    with pytest.raises(RedisUnavailable, match="skipped"):
        tripped.call(refused, what="t")
    clock.now += 5.0  # the probe is refused at once: the breaker closes, and calls go to Redis again
    with pytest.raises(RedisUnavailable, match="ConnectionError"):
        tripped.call(refused, what="t")
    assert not tripped.is_open
    assert tripped.call(lambda: "back", what="t") == "back"
    assert calls == ["refused", "refused", "waited", "refused"]


def test_an_answer_that_fails_the_call_opens_nothing_however_long_it_took():
    """Just after a failover's promotion the new primary has no replica yet:
    a link's delivery waits out WAIT and fails. Redis answered; the worker's
    next call (a password check) must still go to it."""
    clock = Clock()
    tripped = CircuitBreaker(cooldown=lambda: 5.0, slow=lambda: 0.125, clock=clock)

    def too_few_replicas():
        clock.now += 1.0  # REDIS_WAIT_TIMEOUT_MS
        raise NotReplicated("0 of 1 replicas confirmed link changes in time")

    def slow_error_reply():
        clock.now += 0.5
        raise redis.ResponseError("BUSY Redis is busy running a script")

    for answer, name in ((too_few_replicas, "NotReplicated"), (slow_error_reply, "ResponseError")):
        with pytest.raises(RedisUnavailable, match=name):
            tripped.call(answer, what="t")
        assert not tripped.is_open
        assert tripped.call(lambda: "checked", what="t") == "checked"


def test_errors_that_are_not_redis_errors_pass_through_and_do_not_trip_it():
    tripped = CircuitBreaker(cooldown=lambda: 5.0, slow=lambda: 0.125, clock=Clock())
    with pytest.raises(KeyError):
        tripped.call(lambda: {}["missing"], what="t")
    assert not tripped.is_open

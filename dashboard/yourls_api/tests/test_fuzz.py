"""Whatever reaches yourls-api.php, never a 5xx, drawn by hypothesis: each
action with its own parameters and others, signed each way YOURLS allows;
and signatures, timestamps, hashes and passwords right and wrong. Values
are those YOURLS' clients send, whole numbers at the edges of the integers
PHP and PostgreSQL hold, and text that cannot be stored (NUL, lone
surrogates); sent by GET, as a POSTed form, or in a POST's query string."""

import json
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testing.factories import make_link
from tokens.signatures import token_signature

from .conftest import timed

pytestmark = pytest.mark.django_db

ACTIONS = ["shorturl", "expand", "url-stats", "stats", "db-stats", "version"]
FORMATS = ["json", "jsonp", "xml", "simple", "JSON", "", "php"]
ACTION_PARAMS = ["url", "keyword", "title", "shorturl", "filter", "limit", "start", "callback", "jsonp", "db"]
AUTH_PARAMS = ["signature", "timestamp", "hash", "username", "password"]
NUMBERS = {"limit", "start", "timestamp", "db"}
NASTY = [
    "", "0", "1", " 1", "1.0", "-1", "+5", "99999999999999999999", "-99999999999999999999", "1e309", "0x10",
    "top", "bottom", "rand", "last", "md5", "sha1", "sha256", "sha512", "crc32", "\x00", "\ud800", "a\udfffb",
    "\u200b", "https://example.com/", "http://ex.com/é?q=1#f", "javascript:alert(1)", "//x", "x" * 3000,
    "fz", "FZ", "https://go.example.com/fz", "http://testserver/fz", "alert(1)//", "cb", "..", "%", "/",
]  # fmt: skip
# Whole numbers where a 32-bit integer, a double's, a 64-bit one or
# PostgreSQL's bigint ends, either side.
EDGES = [str(sign * edge + step) for edge in (2**31, 2**53, 2**63, 2**64, 10**20) for sign in (1, -1) for step in (-1, 0, 1)]  # fmt: skip
text = st.one_of(st.sampled_from(NASTY), st.text(st.characters(exclude_categories=()), max_size=40))
number = st.one_of(st.sampled_from(EDGES), st.integers(min_value=-(2**70), max_value=2**70).map(str), text)


def drawn(names: list[str]) -> st.SearchStrategy[dict[str, str]]:
    """Some of these parameters, each with a value of its kind; or any names."""
    return st.fixed_dictionaries({}, optional={name: number if name in NUMBERS else text for name in names}) | (
        st.dictionaries(st.sampled_from(names) | text.filter(lambda name: name not in AUTH_PARAMS), text, max_size=6)
    )


def encoded(value: str) -> str:
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def send(client, method: str, fields: dict[str, str]):
    query = "&".join(f"{encoded(name)}={encoded(value)}" for name, value in fields.items())
    if method == "GET":
        return client.get(f"/yourls-api.php?{query}")
    if method == "POST":
        return client.generic("POST", "/yourls-api.php", query, content_type="application/x-www-form-urlencoded")
    # YOURLS reads a POST's query string too, its form's fields over it.
    return client.generic("POST", f"/yourls-api.php?{query}", "", content_type="application/x-www-form-urlencoded")


def assert_answered(response, method: str, fields: dict[str, str]) -> None:
    assert response.status_code < 500, (method, fields)
    if response.status_code >= 400 and response["Content-Type"].startswith("application/json"):
        answer = json.loads(response.content)
        assert str(response.status_code) in (answer.get("errorCode"), answer.get("statusCode")), (method, fields)


@pytest.fixture
def keys(user, make_token):
    """The ways this user's write token signs a request, by name."""
    token, raw = make_token(user)
    make_link(owner=user, url="https://example.com/", slug="fz")
    signed = token_signature(token)
    return {
        "token": {"signature": raw},
        "signed": {"signature": signed},
        "timed": timed(signed),
        "timed-sha256": {**timed(signed, hash_name="sha256", secret_first=True), "hash": "sha256"},
    }


FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
METHODS = st.sampled_from(["GET", "POST", "POST-query"])


@pytest.mark.parametrize("action", ACTIONS)
@FUZZ
@given(
    format_=st.sampled_from(FORMATS) | text,
    key=st.sampled_from(["token", "signed", "timed", "timed-sha256"]),
    params=drawn(ACTION_PARAMS),
    method=METHODS,
)
def test_no_action_is_a_5xx(client, keys, action, format_, key, params, method):
    fields = {**params, "action": action, "format": format_, **keys[key]}
    assert_answered(send(client, method, fields), method, fields)


@FUZZ
@given(
    action=st.sampled_from(ACTIONS) | text,
    format_=st.sampled_from(FORMATS) | text,
    key=st.sampled_from(["token", "signed", "timed", "timed-sha256", "none"]),
    auth=drawn(AUTH_PARAMS),
    method=METHODS,
)
def test_no_signature_is_a_5xx(client, keys, action, format_, key, auth, method):
    fields = {"action": action, "format": format_, **keys.get(key, {}), **auth}
    assert_answered(send(client, method, fields), method, fields)

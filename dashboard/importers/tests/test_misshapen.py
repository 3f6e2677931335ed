"""A server that answers in shapes its kind never writes (a field missing,
a list where a mapping was, text where a number was, drawn by
hypothesis around Kutt's and Shlink's own answers): the import stops
with a sentence naming the source (a CommandError, the job failed), or
reads what it can; never another exception, never a job left running."""

import pytest
from django.core.management import CommandError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from importers.models import ImportJob, State

from .helpers import import_links, secret_file
from .servers import ApiServer

pytestmark = pytest.mark.django_db

KEY = "misshapen-key"
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.sampled_from(["", "x", "7", "https://example.com/", "2026-11-27T10:00:00+00:00", "2026-13-45", "many"]),
    st.text(max_size=12),
)
json_value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def shaped(fields: dict) -> st.SearchStrategy:
    """A mapping with some of these fields, each its own kind of value or any JSON."""
    return st.fixed_dictionaries({}, optional={name: kind | json_value for name, kind in fields.items()}) | json_value


KUTT_LINK = shaped(
    {
        "id": st.uuids().map(str),
        "address": st.sampled_from(["abc", "spring", "x y"]),
        "target": st.sampled_from(["https://example.com/", "ftp://x", "example.com"]),
        "domain": st.sampled_from([None, "go.example.com", "NOT A HOST"]),
        "description": st.text(max_size=10),
        "expire_in": st.sampled_from([None, "2030-01-01T00:00:00Z", "soon"]),
        "created_at": st.sampled_from(["2026-11-26T05:56:09.000Z", "yesterday"]),
        "visit_count": st.integers(-5, 10**12),
        "password": st.booleans(),
        "banned": st.booleans(),
    }
)
SHLINK_URL = shaped(
    {
        "shortCode": st.sampled_from(["abc", "spring", "a/b"]),
        "longUrl": st.sampled_from(["https://example.com/", "mailto:x"]),
        "domain": st.sampled_from([None, "go.example.com"]),
        "dateCreated": st.sampled_from(["2026-11-26T05:56:09+00:00", "0"]),
        "tags": st.lists(st.text(max_size=6), max_size=2),
        "meta": shaped({"validSince": st.none(), "validUntil": st.none(), "maxVisits": st.integers(-1, 10)}),
        "visitsSummary": shaped(
            {"total": st.integers(0, 10), "nonBots": st.integers(0, 10), "bots": st.integers(0, 3)}
        ),
        "title": st.none() | st.text(max_size=6),
        "crawlable": st.booleans(),
        "forwardQuery": st.booleans(),
    }
)
SHLINK_VISIT = shaped(
    {
        "referer": st.text(max_size=6),
        "date": st.sampled_from(["2026-11-26T05:56:09+00:00", "later"]),
        "userAgent": st.text(max_size=6),
        "visitLocation": st.none() | shaped({"countryCode": st.sampled_from(["NL", "xx"])}),
        "potentialBot": st.booleans(),
        "visitedUrl": st.text(max_size=6),
    }
)


def listing(item: st.SearchStrategy, **extra) -> st.SearchStrategy:
    return st.fixed_dictionaries({"data": st.lists(item, max_size=3) | json_value, **extra}) | json_value


class Answers:
    """What the server answers next: set by each example."""

    def __init__(self):
        self.route = lambda path, query: None

    def __call__(self, path, query):
        return self.route(path, query)


@pytest.fixture
def server():
    answers = Answers()
    with ApiServer(answers, header="X-Api-Key", secret=KEY) as running:
        running.answers = answers
        yield running


def imported(kind: str, url: str, user, team, tmp_path) -> None:
    try:
        import_links(kind, url=url, api_key_file=secret_file(tmp_path, KEY), user=user.username, team=str(team.pk))
    except CommandError as exc:
        assert str(exc).startswith("import #"), exc
    assert not ImportJob.objects.filter(state__in=[State.QUEUED, State.RUNNING]).exists()


FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@FUZZ
@given(answer=listing(KUTT_LINK, total=st.integers(0, 3) | json_value))
def test_a_misshapen_kutt_is_a_clear_error(server, user, team, tmp_path, answer):
    server.answers.route = lambda path, query: (
        (200, answer) if path == "/api/v2/links" and query["skip"] == ["0"] else None
    )
    imported("kutt", server.url, user, team, tmp_path)


@FUZZ
@given(
    urls=listing(SHLINK_URL, pagination=json_value),
    visits=listing(SHLINK_VISIT, pagination=json_value),
    other=json_value,
)
def test_a_misshapen_shlink_is_a_clear_error(server, user, team, tmp_path, urls, visits, other):
    def route(path, query):
        if path.endswith("/short-urls") and query.get("page", ["1"]) == ["1"]:
            return 200, {"shortUrls": urls}
        if path.endswith("/visits") or path.endswith("/visits/orphan"):
            return (200, {"visits": visits}) if query.get("page", ["1"]) == ["1"] else (200, {"visits": {"data": []}})
        return 200, other

    server.answers.route = route
    imported("shlink", server.url, user, team, tmp_path)

"""The Shlink source against answers shaped as the examples of Shlink's
OpenAPI spec (data/shlink/examples.json, from shlinkio/shlink's
docs/swagger): no Shlink server runs here (its PHP packages cannot be
installed); test_shlink.py reads Slingshot's own Shlink API."""

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from django.core.management import CommandError
from django.db import connection

from importers.models import ImportJob
from links.models import Link
from slingshot.contract import VISITS_KEY_PREFIX
from slingshot.redis import get_redis

from .helpers import import_links, secret_file
from .servers import ApiServer, one_page

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = json.loads((Path(__file__).parent / "data" / "shlink" / "examples.json").read_text())
KEY = "shlink-test-key"


def route(path: str, query: dict) -> tuple[int, object] | None:
    if path == "/rest/v3/short-urls":
        return 200, {"shortUrls": one_page(EXAMPLES["short-urls"]["shortUrls"])}
    if path == "/rest/v3/domains":
        return 200, EXAMPLES["domains"]
    if path == "/rest/v3/visits/orphan":
        return 200, {"visits": one_page(EXAMPLES["orphan-visits"]["visits"])}
    if path.endswith("/redirect-rules"):
        return 200, EXAMPLES["redirect-rules"]
    if path.endswith("/visits"):
        return 200, {"visits": one_page(EXAMPLES["visits"]["visits"])}
    return None


def run(url: str, tmp_path, **options) -> str:
    return import_links("shlink", url=url, api_key_file=secret_file(tmp_path, KEY), **options)


def test_the_examples_of_shlinks_spec_import(user, team, tmp_path):
    with ApiServer(route, header="X-Api-Key", secret=KEY) as server:
        out = run(server.url, tmp_path, user=user.username, team=str(team.pk))

    assert "links: 3 read, 3 created" in out, out
    steam = Link.objects.get(team=team, slug="12C18")
    assert (steam.url, steam.title, steam.tags, steam.max_visits, steam.crawlable, steam.forward_query) == (
        "https://store.steampowered.com",
        "Welcome to Steam",
        ["games", "tech"],
        100,
        False,
        True,
    )
    assert steam.valid_since == datetime(2017, 1, 20, 22, tzinfo=timezone.utc)
    assert steam.created_at == datetime(2016, 8, 21, 18, 34, 16, tzinfo=timezone.utc)
    # Shlink's device and fr rules are Slingshot's; en-US is a language tag Slingshot reads too.
    assert steam.rules == [
        {
            "url": "https://example.com/android-en-us",
            "conditions": [{"type": "device", "value": "android"}, {"type": "language", "value": "en-US"}],
        },
        {"url": "https://example.com/fr", "conditions": [{"type": "language", "value": "fr"}]},
        {
            "url": "https://example.com/query-foo-bar-hello-world",
            "conditions": [
                {"type": "query", "key": "foo", "value": "bar"},
                {"type": "query", "key": "hello", "value": "world"},
            ],
        },
    ]
    # example.com is the Shlink's default domain: its short URL comes into the chosen one.
    google = Link.objects.get(team=team, slug="123bA")
    assert google.domain_id == steam.domain_id and google.forward_query is False
    # The visit limit's counter starts where Shlink's count was.
    assert int(get_redis().get(VISITS_KEY_PREFIX + str(steam.pk))) == 328
    # Three visits of each link, the same second: three clicks each, the crawler's a bot's.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT occurred_at, referer, country, is_bot FROM clicks WHERE link_id = %s ORDER BY referer", [steam.pk]
        )
        rows = cursor.fetchall()
    at = datetime(2015, 8, 20, 1, 5, 3, tzinfo=timezone.utc)
    assert rows == [
        (at, "", "unknown", True),
        (at, "https://t.co", "US", False),
        (at, "https://twitter.com", "unknown", False),
    ]
    assert "visits: 9 read, 9 stored" in out
    # Orphan visits: Slingshot records those of a path that could be a slug (invalid_short_url).
    job = ImportJob.objects.get(team=team)
    with connection.cursor() as cursor:
        cursor.execute("SELECT slug, domain, country FROM orphan_visits WHERE import_id = %s", [job.pk])
        assert cursor.fetchall() == [("foo", "s.test", "US")]
    assert "orphan visits: 1 read, 1 stored" in out


def test_a_wrong_key_is_a_clear_error(user, tmp_path):
    with ApiServer(route, header="X-Api-Key", secret="another") as server, pytest.raises(CommandError, match="refused"):
        run(server.url, tmp_path, user=user.username)
    assert not Link.objects.filter(owner=user).exists()


def test_a_second_run_adds_nothing(user, team, tmp_path):
    with ApiServer(route, header="X-Api-Key", secret=KEY) as server:
        run(server.url, tmp_path, user=user.username, team=str(team.pk))
        out = run(server.url, tmp_path, user=user.username, team=str(team.pk))
    assert "0 created, 3 imported before" in out and "9 read, 0 stored, 9 stored before" in out
    assert "nothing new" in out

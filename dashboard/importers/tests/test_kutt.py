"""Kutt: its API v2 as a real Kutt 3.2.3 server answered it (recorded on
branch kutt-server: data/kutt-3.2.3-api-v2.json), replayed by a local
server: links with descriptions, expiry, a password, a custom domain, a
banned one, and their visit totals."""

import json
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.core.management import CommandError

from links.domains import domain_create
from links.models import Link

from .helpers import import_links, secret_file, total_clicks
from .servers import ApiServer

pytestmark = pytest.mark.django_db

RECORDED = json.loads((Path(__file__).parent / "data" / "kutt-3.2.3-api-v2.json").read_text())
KEY = "kutt-test-key"


def route(path: str, query: dict):
    asked = f"{path}?{urlencode([(name, value) for name, values in query.items() for value in values])}"
    for exchange in RECORDED["exchanges"]:
        if exchange["api_key"] == "valid" and exchange["path"] == asked:
            return exchange["status"], exchange["body"]
    return None


def run(url: str, tmp_path, **options) -> str:
    return import_links("kutt", url=url, api_key_file=secret_file(tmp_path, KEY), **options)


def test_a_kutt_servers_links_with_their_visit_totals(user, team, tmp_path):
    served = domain_create(host="go.example.com")
    with ApiServer(route, header="X-API-KEY", secret=KEY) as server:
        out = run(server.url, tmp_path, user=user.username, team=str(team.pk))

    assert "links: 53 read, 53 created" in out, out
    described = Link.objects.get(team=team, slug="BYXMxH")
    assert (described.description, described.url, total_clicks(described)) == (
        "Spring sale, émoji ✓",
        "https://example.com/described",
        3,
    )
    assert described.created_at == datetime(2026, 11, 26, 5, 56, 9, tzinfo=timezone.utc)
    assert Link.objects.get(team=team, slug="soon").expires_at == datetime(2026, 12, 26, 5, 56, 9, tzinfo=timezone.utc)
    locked = Link.objects.get(team=team, slug="qR865S")
    assert (locked.is_active, bool(locked.password), total_clicks(locked)) == (False, False, 1)
    assert "qR865S: it asks for a password" in out
    assert Link.objects.get(team=team, slug="t5AX5h").is_active is False and "banned" in out
    assert Link.objects.get(slug="promo").domain == served
    assert "clicks counted by the source without their visits: 4 added" in out


def test_a_second_run_adds_nothing(user, team, tmp_path):
    domain_create(host="go.example.com")
    with ApiServer(route, header="X-API-KEY", secret=KEY) as server:
        run(server.url, tmp_path, user=user.username, team=str(team.pk))
        again = run(server.url, tmp_path, user=user.username, team=str(team.pk))
    assert "0 created, 53 imported before" in again and "nothing new" in again
    assert total_clicks(Link.objects.get(team=team, slug="BYXMxH")) == 3


def test_a_link_on_a_domain_not_served_is_reported(user, team, tmp_path):
    with ApiServer(route, header="X-API-KEY", secret=KEY) as server:
        out = run(server.url, tmp_path, user=user.username, team=str(team.pk), dry_run=True)
    assert "52 would be created" in out and "add the domain go.example.com first" in out
    assert not Link.objects.filter(team=team).exists()


def test_a_wrong_key_is_a_clear_error(user, tmp_path):
    with ApiServer(route, header="X-API-KEY", secret="another") as server, pytest.raises(CommandError, match="refused"):
        run(server.url, tmp_path, user=user.username)

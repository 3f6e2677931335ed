"""The walking skeleton end to end: service → Redis → edge → stream → importer → PostgreSQL."""

import time
import uuid

import pytest
from django.core.management import call_command

from clicks.models import Click
from clicks.records import decode_entry
from clicks.reports import link_totals
from links import services
from slingshot.contract import CLICKS_STREAM as STREAM
from slingshot.redis import get_redis
from testing.factories import make_link, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def imported(slug: str, timeout: float = 10.0) -> list[Click]:
    """The clicks on `slug` once the importer has stored one: the shared
    edge writes its clicks from a timer, with other tests' clicks about."""
    deadline = time.monotonic() + timeout
    while True:
        call_command("import_clicks", "--once")
        clicks = list(Click.objects.filter(slug=slug))
        if clicks or time.monotonic() > deadline:
            return clicks
        time.sleep(0.05)


def wait_for_stream_entries(minimum: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while get_redis().xlen(STREAM) < minimum:
        assert time.monotonic() < deadline, f"fewer than {minimum} entries reached {STREAM}"
        time.sleep(0.02)


def test_link_redirects_and_its_click_lands_in_postgres(edge):
    owner = make_user()
    slug = "e2e" + uuid.uuid4().hex[:8]
    link = make_link(owner=owner, url="https://example.com/landing?from=slingshot", slug=slug)

    response = edge.request(f"/{slug}", headers={"User-Agent": "e2e-agent/1.0", "Referer": "https://ref.example/"})

    assert response.status == 302
    assert response.headers["Location"] == "https://example.com/landing?from=slingshot"
    clicks = imported(slug)
    assert len(clicks) == 1
    click = clicks[0]
    assert click.ip == "127.0.0.0"  # anonymised by default (CLICK_IP_PRIVACY)
    assert click.user_agent == "e2e-agent/1.0"
    assert click.referer == "https://ref.example/"
    assert click.link_id == link.pk
    assert edge.errors() == ""


def test_clicks_belong_to_the_link_that_served_them_not_to_its_slug(edge, through_publisher):
    """A link clicked while the importer is away, then deleted, and its slug
    taken by someone else's new link: the clicks go with the deleted link,
    and the new link starts with none (nor its owner with their addresses)."""
    first_owner, second_owner = make_user(), make_user()
    slug = "reuse" + uuid.uuid4().hex[:8]
    first = make_link(owner=first_owner, url="https://example.com/first", slug=slug)
    wait_until_served(edge, slug, "https://example.com/first")
    for _ in range(100):
        assert edge.request(f"/{slug}", headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64)"}).status == 302
    wait_for_stream_entries(1)

    first_id = first.pk
    services.link_delete(link=first)
    second = make_link(owner=second_owner, url="https://example.com/second", slug=slug)
    wait_until_served(edge, slug, "https://example.com/second")
    assert edge.request(f"/{slug}", headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64)"}).status == 302
    deadline = time.monotonic() + 5
    while sum(len(c) for c in stream_link_ids(slug).values()) < 101:
        assert time.monotonic() < deadline, "every click in the stream"
        time.sleep(0.02)
    assert {link_id: len(ids) for link_id, ids in stream_link_ids(slug).items()} == {first_id: 100, second.pk: 1}

    call_command("import_clicks", "--once")

    assert Click.objects.filter(link_id=first_id).count() == 0
    assert Click.objects.filter(link_id=second.pk).count() == 1
    assert link_totals(link_ids=[second.pk])[second.pk].clicks == 1


def wait_until_served(edge, slug: str, target: str, timeout: float = 5.0) -> None:
    """Until every worker redirects `slug` to `target`: twenty answers in a
    row, each on a connection of its own (HEAD, which records no click)."""
    deadline = time.monotonic() + timeout
    while not all(edge.request(f"/{slug}", method="HEAD").headers.get("Location") == target for _ in range(20)):
        assert time.monotonic() < deadline, f"/{slug} never redirected to {target} on every worker"
        time.sleep(0.02)


def stream_link_ids(slug: str) -> dict[int, set[str]]:
    """The click ids of `slug` in the stream, by the link id each carries."""
    found: dict[int, set[str]] = {}
    for _entry, fields in get_redis().xrange(STREAM):
        for click_id, _ts, click_slug, link, *_rest in decode_entry(fields):
            if click_slug == slug and link:
                found.setdefault(int(link), set()).add(click_id)
    return found

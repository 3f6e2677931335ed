"""Links made before their destination was listed (links/flags.py): the
next reading of the lists flags them, with the reason, publishes them
`listed` (the edge answers 451) and shows the team why; a list that drops them, or an edit to a
target no list has, clears the flag."""

import json

import pytest
from django.core.management import call_command

from links import services
from links.models import Link, LinkOutbox
from links.publishing import link_payload
from links.selectors import LinkState, in_state, link_state
from screening import screen
from testing.factories import fresh, make_link

pytestmark = pytest.mark.django_db


@pytest.fixture
def listed_later(tmp_path, settings, user):
    """Three links made while no list was set, then a list that has the
    domain of one's target and of another's rule."""
    phish = f"phish-{fresh()}.example"
    links = {
        "target": make_link(owner=user, url=f"https://www.{phish}/login", slug=fresh()),
        "rule": make_link(
            owner=user,
            url="https://example.com/",
            slug=fresh(),
            rules=[{"url": f"https://{phish}/app", "conditions": [{"type": "device", "value": "ios"}]}],
        ),
        "clean": make_link(owner=user, url="https://example.org/", slug=fresh()),
    }
    hosts = tmp_path / "hosts"
    hosts.write_text(f"0.0.0.0 {phish}\n")
    settings.SCREEN_LISTS = [f"hagezi={hosts}"]
    LinkOutbox.objects.all().delete()
    screen.forget()
    yield phish, links, hosts
    screen.forget()


def test_the_next_reading_flags_them_publishes_them_disabled_and_says_why(listed_later, signed_in):
    phish, links, _ = listed_later
    call_command("screen_lists", "--once")
    for name in ("target", "rule"):
        links[name].refresh_from_db()
        assert links[name].listed == f"{phish}: hagezi", name
        published = json.loads(link_payload(links[name]))
        # The edge answers 451; one older than `listed` reads `active`, and answers 404.
        assert published["listed"] is True and published["active"] is False
        assert link_state(links[name]) == LinkState.DISABLED
    links["clean"].refresh_from_db()
    assert links["clean"].listed == "" and link_state(links["clean"]) == LinkState.ACTIVE
    assert set(LinkOutbox.objects.values_list("slug", flat=True)) == {links["target"].slug, links["rule"].slug}
    assert set(Link.objects.filter(in_state(LinkState.DISABLED)).values_list("slug", flat=True)) == {
        links["target"].slug,
        links["rule"].slug,
    }
    page = signed_in.get(f"/links/{links['target'].slug}/")
    assert b'id="link-listed"' in page.content and f"{phish}: hagezi".encode() in page.content
    listing = signed_in.get("/links/")
    assert listing.content.count(b'class="listed"') == 2


def test_a_list_that_drops_them_and_an_edit_clear_the_flag(listed_later, settings, user):
    phish, links, hosts = listed_later
    call_command("screen_lists", "--once")
    services.link_update(link=links["rule"], actor=user, rules=[])
    links["rule"].refresh_from_db()
    assert links["rule"].listed == ""
    LinkOutbox.objects.all().delete()
    hosts.write_text("0.0.0.0 other.example\n")
    call_command("screen_lists", "--once")
    links["target"].refresh_from_db()
    published = json.loads(link_payload(links["target"]))
    assert links["target"].listed == "" and "listed" not in published and published["active"] is True
    assert list(LinkOutbox.objects.values_list("slug", flat=True)) == [links["target"].slug]

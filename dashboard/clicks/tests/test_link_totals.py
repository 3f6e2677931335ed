"""Links with their all-time click totals (clicks.selectors), the one way
other apps read link_click_totals: listed, searched, sorted and counted in
the query that reads the links, the totals those the importer stored."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from clicks import selectors
from clicks.visits import link_click_counts
from links import selectors as link_selectors
from links.models import Link
from testing.factories import fresh, make_link, make_user
from testing.streams import importer as make_importer

from .test_visits import BOT, click, store

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_rollups")]


@pytest.fixture
def importer():
    return make_importer("totals-" + uuid.uuid4().hex[:6])


def test_links_are_read_with_their_click_totals_in_the_same_query(importer, django_assert_num_queries):
    owner = make_user()
    busy, quiet, idle = (make_link(owner=owner, url=f"https://example.com/{n}") for n in range(3))
    theirs = make_link(owner=make_user(), url="https://example.com/theirs")
    store(importer, [click(busy, 1), click(busy, 2), click(busy, 3, BOT), click(quiet, 4), click(theirs, 5)])
    mine = link_selectors.links_visible_to(owner)

    with django_assert_num_queries(1):
        listed = [
            (link.pk, link.clicks, link.human_clicks)
            for link in selectors.with_click_totals(mine).order_by("-clicks", "pk")
        ]
    assert listed == [(busy.pk, 3, 2), (quiet.pk, 1, 1), (idle.pk, 0, 0)]
    with django_assert_num_queries(1):
        assert [link.pk for link in selectors.link_search(user=owner, ordering="-human_clicks")] == [
            busy.pk,
            quiet.pk,
            idle.pk,
        ]
    with django_assert_num_queries(1):
        assert selectors.links_and_clicks(mine) == (3, 4, 3)
    with django_assert_num_queries(1):
        assert link_click_counts(mine) == (4, 1)
    assert selectors.links_and_clicks(mine.filter(pk=idle.pk)) == (1, 0, 0)


def test_link_search_words_filters_and_order(django_assert_num_queries):
    owner, other = make_user(), make_user()
    now = timezone.now()
    spring = make_link(
        owner=owner,
        url="https://shop.example/spring",
        slug=fresh("sp"),
        title="Spring Sale",
        tags=["sale", "2030"],
    )
    summer = make_link(
        owner=owner,
        url="https://shop.example/summer",
        slug=fresh("su"),
        title="Summer sale",
        tags=["sale"],
        is_active=False,
    )
    blog = make_link(owner=owner, url="https://blog.example/post", slug=fresh("bl"), title="A post")
    theirs = make_link(owner=other, url="https://shop.example/theirs", slug=fresh("th"), title="Sale")
    for age, link in enumerate([spring, summer, blog, theirs]):
        Link.objects.filter(pk=link.pk).update(created_at=now - timedelta(days=age))

    def slugs(**arguments):
        return [link.slug for link in selectors.link_search(user=owner, **arguments)]

    assert slugs() == [spring.slug, summer.slug, blog.slug]  # newest first, only the owner's
    assert slugs(query="SALE shop.example") == [spring.slug, summer.slug]
    assert slugs(query='"spring sale"') == [spring.slug] and slugs(query='"sale spring"') == []
    assert slugs(query="sale,summer") == [summer.slug]
    assert slugs(query=blog.slug[2:6]) == [blog.slug]  # slugs are searched too
    assert slugs(tag="sale", is_active=True) == [spring.slug]
    assert slugs(is_active=False) == [summer.slug]
    assert slugs(created_after=now - timedelta(days=1, hours=1), created_before=now - timedelta(hours=1)) == [
        summer.slug
    ]
    assert slugs(ordering="created_at") == [blog.slug, summer.slug, spring.slug]
    assert slugs(ordering=["slug"]) == sorted([spring.slug, summer.slug, blog.slug])
    superuser = make_user(is_staff=True, is_superuser=True)
    assert {link.slug for link in selectors.link_search(user=superuser, query="sale")} >= {spring.slug, theirs.slug}
    staff = make_user(is_staff=True)
    assert list(selectors.link_search(user=staff, query="sale")) == []

    with django_assert_num_queries(1):  # the click totals come in the same query
        links = list(selectors.link_search(user=owner, ordering=["-clicks", "slug"]))
    assert [link.clicks for link in links] == [0, 0, 0] and links[0].human_clicks == 0

    with pytest.raises(ValueError, match="cannot order links by description"):
        selectors.link_search(user=owner, ordering=["description"])


def test_link_search_by_state_finds_the_links_in_that_state_as_link_state_has_it():
    owner = make_user()
    now, day = timezone.now(), timedelta(days=1)
    made = [
        make_link(owner=owner, url="https://example.com/1"),
        make_link(owner=owner, url="https://example.com/2", expires_at=now - day),
        make_link(owner=owner, url="https://example.com/3", expires_at=now + day),
        make_link(owner=owner, url="https://example.com/4", valid_since=now + day, expires_at=now + 2 * day),
        make_link(owner=owner, url="https://example.com/5", valid_since=now - day, expires_at=now - day / 2),
        make_link(owner=owner, url="https://example.com/6", is_active=False, expires_at=now - day),
    ]
    for state in (
        link_selectors.LinkState.ACTIVE,
        link_selectors.LinkState.SCHEDULED,
        link_selectors.LinkState.EXPIRED,
        link_selectors.LinkState.DISABLED,
    ):
        found = {link.pk for link in selectors.link_search(user=owner, state=state)}
        assert found == {link.pk for link in made if link_selectors.link_state(link) == state}, state
        assert found, state  # each state has a link here
    with pytest.raises(ValueError):
        link_selectors.in_state(link_selectors.LinkState.LIMIT_REACHED)

from datetime import timedelta

import pytest
from django.utils import timezone

from links import selectors
from links.models import Link
from testing.factories import fresh, make_link, make_user

pytestmark = pytest.mark.django_db(transaction=True)


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


def test_taken_slugs_is_one_query_whoever_owns_them(django_assert_num_queries):
    mine = make_link(owner=make_user(), url="https://example.com/", slug=fresh())
    theirs = make_link(owner=make_user(), url="https://example.com/", slug=fresh())
    domain = mine.domain_id
    asked = [mine.slug, theirs.slug, mine.slug.upper(), fresh(), *(fresh() for _ in range(70_000))]
    with django_assert_num_queries(1):
        taken = selectors.taken_slugs(slugs=[(domain, slug) for slug in asked] + [(domain + 1, mine.slug)])
    assert taken == {(domain, mine.slug), (domain, theirs.slug)}


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
        selectors.LinkState.ACTIVE,
        selectors.LinkState.SCHEDULED,
        selectors.LinkState.EXPIRED,
        selectors.LinkState.DISABLED,
    ):
        found = {link.pk for link in selectors.link_search(user=owner, state=state)}
        assert found == {link.pk for link in made if selectors.link_state(link) == state}, state
        assert found, state  # each state has a link here
    with pytest.raises(ValueError):
        selectors.in_state(selectors.LinkState.LIMIT_REACHED)

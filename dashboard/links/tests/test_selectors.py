import pytest

from links import selectors
from testing.factories import fresh, make_link, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def test_taken_slugs_is_one_query_whoever_owns_them(django_assert_num_queries):
    mine = make_link(owner=make_user(), url="https://example.com/", slug=fresh())
    theirs = make_link(owner=make_user(), url="https://example.com/", slug=fresh())
    domain = mine.domain_id
    asked = [mine.slug, theirs.slug, mine.slug.upper(), fresh(), *(fresh() for _ in range(70_000))]
    with django_assert_num_queries(1):
        taken = selectors.taken_slugs(slugs=[(domain, slug) for slug in asked] + [(domain + 1, mine.slug)])
    assert taken == {(domain, mine.slug), (domain, theirs.slug)}

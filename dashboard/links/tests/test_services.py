import json
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from django.core.exceptions import ValidationError

from links import services
from links.domains import default_domain
from links.fields import LinkFields
from links.models import Link
from slingshot.contract import LINK_CHANGES_STREAM, link_key
from slingshot.redis import get_redis
from testing.factories import make_link, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner():
    return make_user()


def fresh(prefix: str = "s") -> str:
    return prefix + uuid.uuid4().hex[:10]


def published(slug: str):
    raw = get_redis().get(link_key(slug))
    return None if raw is None else json.loads(raw)


def test_create_publishes_every_field_after_commit(owner):
    slug = fresh()
    expires = datetime(2031, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    link = make_link(
        owner=owner,
        url="https://example.com/a",
        slug=slug,
        redirect_status=308,
        expires_at=expires,
        forward_query=True,
        is_active=False,
    )
    assert published(slug) == {
        "id": link.pk,
        "url": "https://example.com/a",
        "status": 308,
        "active": False,
        "valid_since": None,
        "expires_at": int(expires.timestamp()),
        "max_visits": None,
        "forward_query": True,
        "password": False,
        "password_version": None,
        "unlock_url": None,
        "rules": [],
        "split": [],
        "ios_url": None,
        "android_url": None,
        "expired_url": None,
        "preview_title": None,
        "preview_description": None,
        "preview_image": None,
    }
    changes = get_redis().xrevrange(LINK_CHANGES_STREAM, count=1)
    assert changes[0][1] == {b"slug": slug.encode()}


def test_nothing_is_published_when_the_transaction_rolls_back(owner):
    from django.db import transaction

    slug = fresh()
    with pytest.raises(RuntimeError), transaction.atomic():
        make_link(owner=owner, url="https://example.com/", slug=slug)
        raise RuntimeError("rolled back")
    assert published(slug) is None
    assert not Link.objects.filter(slug=slug).exists()


def test_update_and_rename_and_delete_keep_redis_in_step(owner):
    old, new = fresh("old"), fresh("new")
    link = make_link(owner=owner, url="https://example.com/1", slug=old)
    services.link_update(link=link, slug=new, url="https://example.com/2")
    assert published(old) is None
    assert published(new)["url"] == "https://example.com/2"
    services.link_delete(link=link)
    assert published(new) is None


def test_generated_slugs_are_base62_of_the_configured_length(owner, settings):
    settings.LINK_SLUG_LENGTH = 9
    link = make_link(owner=owner, url="https://example.com/")
    assert len(link.slug) == 9 and link.slug.isalnum()
    assert published(link.slug)["url"] == "https://example.com/"


@pytest.mark.parametrize(
    "url, message",
    [
        ("javascript:alert(1)", "Only http and https"),
        ("data:text/html,hi", "Only http and https"),
        ("file:///etc/passwd", "Only http and https"),
        ("ftp://example.com/", "Only http and https"),
        ("https://exa mple.com/", "spaces or control"),
        ("https://example.com/\r\nSet-Cookie: a=b", "spaces or control"),
        ("https:///path-only", "needs a host"),
        ("/relative/path", "Only http and https"),
        ("https://example.com/" + "a" * 2100, "longer than 2048"),
        ("http://127.0.0.1:8080/loop", "point back"),
    ],
)
def test_unsafe_targets_are_refused(owner, settings, url, message):
    settings.EDGE_BASE_URL = "http://127.0.0.1:8080"
    with pytest.raises(ValidationError) as caught:
        make_link(owner=owner, url=url, slug=fresh())
    assert message in str(caught.value)


@pytest.mark.parametrize("slug", ["has space", "semi;colon", "ünïcode", "a" * 65, "admin", "API", "healthz"])
def test_bad_slugs_are_refused(owner, slug):
    with pytest.raises(ValidationError):
        make_link(owner=owner, url="https://example.com/", slug=slug)
    assert not Link.objects.filter(slug=slug).exists()


def test_a_taken_slug_is_refused(owner):
    slug = fresh()
    make_link(owner=owner, url="https://example.com/", slug=slug)
    with pytest.raises(ValidationError) as caught:
        make_link(owner=owner, url="https://example.org/", slug=slug)
    assert "already exists" in str(caught.value)


def test_link_validate_checks_like_link_create_without_a_query(owner, django_assert_num_queries):
    domain = default_domain()
    services.link_validate(
        LinkFields(url="https://example.com/", domain=domain)
    )  # reads the domains' hosts, kept a while
    with django_assert_num_queries(0):
        link = services.link_validate(
            LinkFields(url="https://example.com/", domain=domain, tags=["a"], redirect_status=308)
        )
        assert link.pk is None and len(link.slug) == 7 and link.tags == ["a"]
        with pytest.raises(ValidationError) as caught:
            services.link_validate(
                LinkFields(url="ftp://example.com/", domain=domain, slug="admin", tags=["no tag"], redirect_status=303)
            )
    assert set(caught.value.message_dict) == {"url", "slug", "tags", "redirect_status"}
    expires = datetime(2030, 1, 1, tzinfo=timezone(timedelta(hours=16)))  # PostgreSQL keeps offsets within ±15:59
    with pytest.raises(ValidationError) as caught:
        make_link(owner=owner, url="https://example.com/", expires_at=expires)
    assert caught.value.message_dict == {"expires_at": ["The UTC offset must be within ±15:59."]}


def test_bulk_create_gives_each_item_its_outcome_in_its_own_savepoint(owner):
    taken = make_link(owner=owner, url="https://example.com/", slug=fresh())
    repeated = fresh()
    results = services.link_bulk_create(
        owner=owner,
        items=[
            (LinkFields(url="https://example.com/1", slug=repeated, tags=["a"]), None),
            (LinkFields(url="javascript:alert(1)"), None),
            (LinkFields(url="https://example.com/3", slug=taken.slug), None),
            (LinkFields(url="https://example.com/4", slug=repeated), None),
            (LinkFields(url="https://example.com/5"), None),
        ],
    )
    assert [result.outcome for result in results] == [
        services.Outcome.CREATED,
        services.Outcome.INVALID,
        services.Outcome.SLUG_TAKEN,
        services.Outcome.SLUG_TAKEN,
        services.Outcome.CREATED,
    ]
    assert results[1].errors == {"url": ["Only http and https URLs can be shortened."]} and results[1].link is None
    assert results[2].errors == results[3].errors == {"slug": [services.SLUG_TAKEN_MESSAGE]}
    created = {result.link.slug for result in results if result.link}
    assert set(Link.objects.filter(owner=owner).exclude(pk=taken.pk).values_list("slug", flat=True)) == created
    assert all(published(slug) for slug in created)  # each published once the batch committed
    assert services.link_bulk_create(owner=owner, items=[]) == []


def test_a_taken_slug_is_refused_or_generated_anew_without_a_savepoint(owner, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    taken = make_link(owner=owner, url="https://example.com/", slug=fresh())
    generated = iter([taken.slug, fresh()])
    monkeypatch.setattr(services.slugs, "generate_slug", lambda length: next(generated))
    with CaptureQueriesContext(connection) as queries:
        results = services.link_bulk_create(
            owner=owner,
            items=[
                (LinkFields(url="https://example.com/1", slug=taken.slug), None),
                (LinkFields(url="https://example.com/2"), None),  # its first slug is taken: a second one
            ],
        )
    assert [result.outcome for result in results] == [services.Outcome.SLUG_TAKEN, services.Outcome.CREATED]
    assert results[0].errors == {"slug": [services.SLUG_TAKEN_MESSAGE]}
    created = results[1].link
    assert Link.objects.get(pk=created.pk).slug == created.slug != taken.slug
    assert published(created.slug)["url"] == "https://example.com/2"
    assert not [query["sql"] for query in queries.captured_queries if "SAVEPOINT" in query["sql"]]

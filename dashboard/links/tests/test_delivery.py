"""A change reaches Redis from the request that made it and from the
publisher, in either order (links/delivery.py): Redis takes a change of a
link only if it has taken none newer, and the value a request delivers is
the one the publisher reads back from PostgreSQL."""

import json
import random
import threading
import uuid
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone

from links import services
from links.delivery import deliver_outbox
from links.domains import default_domain
from links.models import Link, LinkOutbox
from links.publishing import VERSION_TTL_SECONDS, link_payload, publish_keys, version_key
from slingshot.contract import LINK_CHANGES_STREAM, link_key
from slingshot.redis import get_redis
from testing.factories import make_link, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner():
    """Someone to make links, once the default domain is made and
    delivered: a domain's change has a request deliver the outbox."""
    default_domain()
    deliver_outbox()
    return make_user()


def fresh() -> str:
    return "dv" + uuid.uuid4().hex[:10]


def changes_of(slug: str) -> int:
    """The change notifications of `slug` in the stream."""
    return sum(fields.get(b"slug") == slug.encode() for _, fields in get_redis().xrange(LINK_CHANGES_STREAM))


def test_a_change_older_than_the_one_redis_took_is_refused():
    host, slug = default_domain().host, fresh()
    key = (host, slug)
    publish_keys([key], links={}, values={key: '{"id":1,"url":"https://example.com/new"}'}, versions={key: 20})
    publish_keys([key], links={}, values={key: '{"id":1,"url":"https://example.com/old"}'}, versions={key: 10})
    assert json.loads(get_redis().get(link_key(slug)))["url"] == "https://example.com/new"
    assert changes_of(slug) == 1  # the refused change notified no edge
    # A deletion stays deleted when the create it follows arrives after it.
    publish_keys([key], links={}, values={key: None}, versions={key: 30})
    publish_keys([key], links={}, values={key: '{"id":1,"url":"https://example.com/new"}'}, versions={key: 25})
    assert get_redis().get(link_key(slug)) is None
    assert changes_of(slug) == 2
    assert 0 < get_redis().ttl(version_key(host, slug)) <= VERSION_TTL_SECONDS


def test_a_created_link_is_delivered_as_postgresql_has_it_and_the_publisher_finds_nothing_to_change(owner):
    """The value the request makes of the link it has just inserted, with
    every option the edge is told of (but crawlable, which goes by the
    domain's robots.txt), is what the publisher reads back; its sweep of
    the outbox rows then changes nothing in Redis and notifies no edge."""
    now = timezone.now()
    slug = fresh()
    make_link(
        owner=owner,
        slug=slug,
        url="https://example.com/every",
        redirect_status=308,
        valid_since=now - timedelta(days=1),
        expires_at=now + timedelta(days=1, microseconds=123457),
        max_visits=5,
        forward_query=True,
        password="a password",
        rules=[{"url": "https://example.com/ios", "conditions": [{"type": "device", "value": "ios"}]}],
        split=[{"url": "https://example.com/a", "weight": 1}, {"url": "https://example.com/b", "weight": 2}],
    )
    delivered = get_redis().get(link_key(slug)).decode()
    assert delivered == link_payload(Link.objects.get(slug=slug))
    assert LinkOutbox.objects.filter(slug=slug).exists()  # left for the publisher's poll
    assert deliver_outbox() >= 1
    assert get_redis().get(link_key(slug)).decode() == delivered
    assert changes_of(slug) == 1
    assert not LinkOutbox.objects.exists()


def test_a_publisher_that_read_a_link_before_its_edit_cannot_undo_the_edit(owner):
    """The publisher read the link as it was (its rows of the create);
    the edit's request delivers the link as edited first; the publisher's
    write of what it read is then refused."""
    slug = fresh()
    link = make_link(owner=owner, slug=slug, url="https://example.com/before")
    key = (link.domain.host, slug)
    (create_row,) = LinkOutbox.objects.filter(slug=slug).values_list("id", flat=True)
    as_read = link_payload(Link.objects.get(pk=link.pk))
    services.link_update(link=link, url="https://example.com/after")
    assert json.loads(get_redis().get(link_key(slug)))["url"] == "https://example.com/after"
    publish_keys([key], links={}, values={key: as_read}, versions={key: create_row})
    assert json.loads(get_redis().get(link_key(slug)))["url"] == "https://example.com/after"


def test_a_deleted_link_is_not_brought_back_by_its_late_create(owner):
    slug = fresh()
    link = make_link(owner=owner, slug=slug, url="https://example.com/deleted")
    key = (link.domain.host, slug)
    value = get_redis().get(link_key(slug)).decode()
    (create_row,) = LinkOutbox.objects.filter(slug=slug).values_list("id", flat=True)
    services.link_delete(link=link)
    assert get_redis().get(link_key(slug)) is None
    publish_keys([key], links={}, values={key: value}, versions={key: create_row})
    assert get_redis().get(link_key(slug)) is None
    with connection.cursor() as cursor:  # and the publisher's sweep of both rows agrees
        cursor.execute("SELECT count(*) FROM links_linkoutbox WHERE slug = %s", [slug])
        assert cursor.fetchone()[0] == 2
    deliver_outbox()
    assert get_redis().get(link_key(slug)) is None


def test_creates_edits_and_deletes_of_the_same_slugs_at_once_leave_redis_as_postgresql(owner):
    """Four threads create, edit and delete links on the same five slugs at
    once, each change delivered by its own request's path: once they are
    done, and before any sweep of the publisher, every slug's key holds what
    PostgreSQL has (or nothing where there is no link)."""
    slugs = [fresh() for _ in range(5)]
    host = default_domain().host
    errors = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for step in range(40):
                slug = rng.choice(slugs)
                link = Link.objects.filter(domain__host=host, slug=slug).first()
                try:
                    if link is None:
                        make_link(owner=owner, slug=slug, url=f"https://example.com/{seed}/{step}")
                    elif rng.random() < 0.3:
                        services.link_delete(link=link)
                    else:
                        services.link_update(link=link, url=f"https://example.com/{seed}/{step}/edited")
                except (ValidationError, Link.DoesNotExist):
                    pass  # another thread made or deleted it first
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for slug in slugs:
        link = Link.objects.filter(domain__host=host, slug=slug).first()
        held = get_redis().get(link_key(slug))
        assert (held and held.decode()) == (link and link_payload(link)), slug

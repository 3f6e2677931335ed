"""Publishing never loses a change: links changed while Redis is down reach it when it returns."""

import os
import subprocess
import sys
import time
import uuid

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from rest_framework.test import APIClient

from devstack import REPO
from links.models import LinkOutbox
from testing.factories import make_link
from tokens.services import token_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def publisher():
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }
    process = subprocess.Popen(
        [sys.executable, str(REPO / "dashboard" / "manage.py"), "run_publisher", "--interval", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    yield process
    process.terminate()
    process.wait(timeout=10)


@pytest.mark.slow
def test_links_created_while_redis_is_down_redirect_once_it_is_back(servers, make_edge, publisher, make_user):
    edge = make_edge(patient_redis=False)  # its own: it logs the Redis outage as errors
    _, raw = token_create(user=make_user(), name="pub", scope="write")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    prefix = "rd" + uuid.uuid4().hex[:6]
    slugs = [f"{prefix}{i}" for i in range(100)]

    servers.stop_redis()
    try:
        for i, slug in enumerate(slugs):
            response = api.post("/api/v1/links", {"url": f"https://example.com/{i}", "slug": slug}, format="json")
            assert response.status_code == 201, response.content
        assert LinkOutbox.objects.count() >= 100
        # The edge has not seen them: Redis is down, so it answers 503.
        assert edge.request(f"/{slugs[0]}").status == 503
    finally:
        servers.start_redis()

    deadline = time.monotonic() + 10
    pending = set(slugs)
    while pending and time.monotonic() < deadline:
        for slug in list(pending):
            if edge.request(f"/{slug}").status == 302:
                pending.discard(slug)
        time.sleep(0.1)
    assert not pending, f"{len(pending)} links never reached the edge"
    assert all(edge.request(f"/{s}").headers["Location"] == f"https://example.com/{i}" for i, s in enumerate(slugs))
    assert LinkOutbox.objects.count() == 0
    call_command("publish_links", "--check")


def test_publish_links_check_finds_every_difference_and_all_repairs(make_user, capsys):
    from slingshot.contract import link_key
    from slingshot.redis import get_redis

    owner = make_user()
    a, b = (make_link(owner=owner, url="https://example.com/", slug="ck" + uuid.uuid4().hex[:8]) for _ in range(2))
    client = get_redis()
    client.delete(link_key(a.slug))
    client.set(link_key(b.slug), '{"url":"https://stale.example/","status":302,"active":true}')
    client.set(link_key("ghost" + uuid.uuid4().hex[:6]), '{"url":"https://ghost.example/"}')

    with pytest.raises(CommandError) as failed:
        call_command("publish_links", "--check")
    assert failed.value.returncode == 1
    out = capsys.readouterr().out
    assert f"missing in Redis: {a.slug}" in out
    assert f"differs: {b.slug}" in out
    assert "not in PostgreSQL: ghost" in out

    call_command("publish_links", "--all")
    call_command("publish_links", "--check")
    assert "PostgreSQL and Redis agree" in capsys.readouterr().out


def test_publish_links_covers_domains_their_links_and_robots_txt(make_user, capsys):
    from links import domains
    from slingshot.contract import DOMAINS_KEY, link_key, robots_key
    from slingshot.redis import get_redis

    owner = make_user()
    domain = domains.domain_create(host=f"ck-{uuid.uuid4().hex[:6]}.example.com", root_url="https://example.com/")
    link = make_link(owner=owner, url="https://example.com/", slug="cd" + uuid.uuid4().hex[:8], domain=domain)
    make_link(owner=owner, url="https://example.com/", slug=link.slug, crawlable=True)  # the default domain's
    client = get_redis()
    gone = f"gone-{uuid.uuid4().hex[:6]}.example.com"
    client.delete(link_key(link.slug, domain.host))
    client.hset(DOMAINS_KEY, domain.host, '{"default":false}')
    client.set(robots_key(domains.default_domain().host), "User-agent: *\nDisallow: /\n")
    client.hset(DOMAINS_KEY, gone, '{"default":false}')
    client.set(link_key("x", gone), '{"url":"https://ghost.example/"}')

    with pytest.raises(CommandError):
        call_command("publish_links", "--check")
    out = capsys.readouterr().out
    assert f"missing in Redis: {domain.host}/{link.slug}" in out
    assert f"domain differs: {domain.host}" in out
    assert f"robots.txt differs: {domains.default_domain().host}" in out
    assert f"domain not in PostgreSQL: {gone}" in out
    assert f"not in PostgreSQL: {gone}/x" in out

    call_command("publish_links", "--all")
    call_command("publish_links", "--check")
    assert "PostgreSQL and Redis agree" in capsys.readouterr().out
    assert client.get(link_key(link.slug)) and client.get(link_key(link.slug, domain.host))
    assert f"Allow: /{link.slug}$" in client.get(robots_key(domains.default_domain().host)).decode()
    assert client.hget(DOMAINS_KEY, gone) is None and client.get(link_key("x", gone)) is None


def test_the_publisher_is_woken_by_notify_not_by_its_poll(through_publisher, make_user):
    """The publisher polls once a minute here: only a NOTIFY can wake it in
    time. It takes milliseconds; the bound leaves room for a busy machine."""
    from slingshot.contract import link_key
    from slingshot.redis import get_redis

    owner = make_user()
    for _ in range(3):
        slug = "nt" + uuid.uuid4().hex[:8]
        make_link(owner=owner, url="https://example.com/notified", slug=slug)
        created = time.monotonic()
        while get_redis().get(link_key(slug)) is None:
            assert time.monotonic() - created < 2, "not delivered within 2 s"
            time.sleep(0.005)

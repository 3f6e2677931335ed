"""The walking skeleton end to end: service → Redis → edge → stream → importer → PostgreSQL."""

import time
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from clicks.models import Click
from links import services
from links.redis import get_redis
from slingshot.contract import CLICKS_STREAM as STREAM

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for_stream_entries(minimum: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while get_redis().xlen(STREAM) < minimum:
        assert time.monotonic() < deadline, f"fewer than {minimum} entries reached {STREAM}"
        time.sleep(0.02)


def test_link_redirects_and_its_click_lands_in_postgres(edge):
    owner = get_user_model().objects.create_user("e2e-owner", password="unused-password-123")
    slug = "e2e" + uuid.uuid4().hex[:8]
    link = services.link_create(owner=owner, url="https://example.com/landing?from=slingshot", slug=slug)

    response = edge.request(f"/{slug}", headers={"User-Agent": "e2e-agent/1.0", "Referer": "https://ref.example/"})

    assert response.status == 302
    assert response.headers["Location"] == "https://example.com/landing?from=slingshot"
    wait_for_stream_entries(1)
    call_command("import_clicks", "--once")

    clicks = list(Click.objects.filter(slug=slug))
    assert len(clicks) == 1
    click = clicks[0]
    assert click.ip == "127.0.0.0"  # anonymised by default (CLICK_IP_PRIVACY)
    assert click.user_agent == "e2e-agent/1.0"
    assert click.referer == "https://ref.example/"
    assert click.link_id == link.pk
    assert edge.errors() == ""

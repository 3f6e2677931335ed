import uuid
from datetime import datetime, timezone

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from clicks.tests.streams import add_entry

FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:120.0) Gecko/20100101 Firefox/120.0"
PASSWORD = "correct horse battery staple"


@pytest.fixture
def make_user(db):
    def factory(**extra):
        return get_user_model().objects.create_user("user-" + uuid.uuid4().hex[:10], password=PASSWORD, **extra)

    return factory


@pytest.fixture
def user(make_user):
    return make_user()


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


def unique_slug(prefix: str = "w") -> str:
    return prefix + uuid.uuid4().hex[:8]


def import_clicks(link, count: int = 1, *, ua: str = FIREFOX, when: datetime | None = None, rule: str = "") -> None:
    """Clicks on a link through the real importer, as the edge would have
    recorded them (served by `rule`, or by the link's url)."""
    ts = int((when or datetime.now(timezone.utc)).timestamp() * 1000)
    add_entry(
        [
            {
                "ts": ts,
                "slug": link.slug,
                "link": link.pk,
                "ip": "198.51.100.7",
                "ua": ua,
                "ref": "https://news.example.org/post",
                "rule": rule,
            }
            for _ in range(count)
        ]
    )
    call_command("import_clicks", "--once", "--consumer", "web-test")

"""Things tests make, the way the product makes them: people with a known
password, links through links.services (validated, audited and published
like any other), and API clients with a token of their own."""

import uuid

from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from links.fields import LinkFields
from links.models import Link
from links.services import link_create
from teams.models import Team
from tokens.services import token_create

PASSWORD = "correct horse battery staple"


def fresh(prefix: str = "t") -> str:
    """A name no other test uses."""
    return prefix + uuid.uuid4().hex[:10]


def make_user(*, username: str | None = None, password: str = PASSWORD, **flags):
    """A person (a fresh user name unless given) with `password`, and these
    flags (is_staff, is_superuser, ...); their personal team made with them."""
    return get_user_model().objects.create_user(username or fresh("user-"), password=password, **flags)


def make_link(*, owner, team: Team | None = None, **options) -> Link:
    """A link of `owner`'s, in `team` (their default team), with these options (links/fields.py)."""
    return link_create(owner=owner, team=team, fields=LinkFields(**options))


def api_client(user, scope: str = "write", **token_fields) -> APIClient:
    """An API client authenticated with a fresh token of `user`'s."""
    _, raw = token_create(user=user, name="test", scope=scope, **token_fields)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client

"""Things tests make, the way the product makes them: people with a known
password, links through links.services (validated, audited and published
like any other), and API clients with a token of their own."""

import functools
import uuid

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
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


@functools.cache
def _hashed(password: str) -> str:
    """`password` hashed as the test processes hash people's passwords
    (testing.hashers), once per test process: every person made with the
    same password shares the hash, salt and all."""
    return make_password(password)


def make_user(*, username: str | None = None, password: str = PASSWORD, **flags):
    """A person (a fresh user name unless given) with `password`, and these
    flags (is_staff, is_superuser, ...); their personal team made with them.
    As UserManager.create_user makes one, with the password's hash made once."""
    model = get_user_model()
    if "email" in flags:
        flags["email"] = model.objects.normalize_email(flags["email"])
    user = model(username=model.normalize_username(username or fresh("user-")), password=_hashed(password), **flags)
    user.save()
    return user


def make_link(*, owner, team: Team | None = None, **options) -> Link:
    """A link of `owner`'s, in `team` (their default team), with these options (links/fields.py)."""
    return link_create(owner=owner, team=team, fields=LinkFields(**options))


def api_client(user, scope: str = "write", **token_fields) -> APIClient:
    """An API client authenticated with a fresh token of `user`'s."""
    _, raw = token_create(user=user, name="test", scope=scope, **token_fields)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client

import uuid

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from api.services import token_create


@pytest.fixture
def make_user(db):
    def factory(**extra):
        return get_user_model().objects.create_user("user-" + uuid.uuid4().hex[:10], **extra)

    return factory


@pytest.fixture
def user(make_user):
    return make_user()


@pytest.fixture
def client_for():
    """An API client authenticated with a fresh token of the given scope."""

    def factory(user, scope="write", **token_fields):
        _, raw = token_create(user=user, name="test", scope=scope, **token_fields)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return factory


@pytest.fixture
def api(client_for, user):
    return client_for(user)


def fresh_slug(prefix="t"):
    return prefix + uuid.uuid4().hex[:10]

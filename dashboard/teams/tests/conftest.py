import uuid
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from links.models import Link
from links.services import link_create
from teams.models import Role, Team
from teams.services import member_add, team_create

PASSWORD = "correct horse battery staple"


def fresh(prefix: str = "t") -> str:
    return prefix + uuid.uuid4().hex[:10]


@pytest.fixture
def make_user(db):
    def factory(**extra):
        return get_user_model().objects.create_user(fresh("user-"), password=PASSWORD, **extra)

    return factory


@dataclass
class Crew:
    """A team with one person of each role, a link of theirs, and people
    outside it: one in no role there, and a superuser."""

    team: Team
    link: Link
    people: dict  # role name ("viewer", "editor", "admin", "non-member", "superuser") -> user


@pytest.fixture
def crew(make_user) -> Crew:
    admin = make_user()
    team = team_create(actor=admin, name=fresh("Marketing "))
    people = {"admin": admin, "non-member": make_user(), "superuser": make_user(is_superuser=True, is_staff=True)}
    for role in (Role.VIEWER, Role.EDITOR):
        people[role.value] = make_user()
        member_add(actor=admin, team=team, username=people[role.value].username, role=role)
    link = link_create(owner=admin, team=team, url="https://example.com/campaign", slug=fresh("c"))
    return Crew(team=team, link=link, people=people)


def session_api(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client

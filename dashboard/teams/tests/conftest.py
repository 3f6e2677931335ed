from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from links.models import Link
from teams.models import Role, Team
from teams.services import member_add, team_create
from testing.factories import fresh, make_link


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
    link = make_link(owner=admin, team=team, url="https://example.com/campaign", slug=fresh("c"))
    return Crew(team=team, link=link, people=people)


def session_api(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client

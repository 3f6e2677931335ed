import pytest

from links.domains import domain_create
from teams.services import team_create
from testing.factories import fresh


@pytest.fixture
def team(user):
    """A team of `user`'s other than their personal one."""
    return team_create(actor=user, name=fresh("team-"))


@pytest.fixture
def other_domain(db):
    """A domain served besides the default one."""
    return domain_create(host=f"{fresh('d')}.example")

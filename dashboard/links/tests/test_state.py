from datetime import datetime, timedelta, timezone

from links.models import Link
from links.selectors import LinkState, link_state

NOW = datetime(2030, 6, 1, 12, tzinfo=timezone.utc)


def test_the_state_is_what_the_edge_does_with_the_link():
    hour = timedelta(hours=1)
    cases = [
        (Link(is_active=True), None, LinkState.ACTIVE),
        (Link(is_active=False, valid_since=NOW + hour), None, LinkState.DISABLED),
        (Link(is_active=True, valid_since=NOW + hour), None, LinkState.SCHEDULED),
        (Link(is_active=True, valid_since=NOW - hour, expires_at=NOW + hour), None, LinkState.ACTIVE),
        (Link(is_active=True, expires_at=NOW), None, LinkState.EXPIRED),
        (Link(is_active=True, max_visits=3), 3, LinkState.LIMIT_REACHED),
        (Link(is_active=True, max_visits=3), 7, LinkState.LIMIT_REACHED),
        (Link(is_active=True, max_visits=3), 2, LinkState.ACTIVE),
        (Link(is_active=True, max_visits=3), None, LinkState.ACTIVE),
        (Link(is_active=True, max_visits=3, expires_at=NOW - hour), 3, LinkState.EXPIRED),
    ]
    for link, visits, state in cases:
        assert link_state(link, now=NOW, visits=visits) is state, (link.__dict__, visits)

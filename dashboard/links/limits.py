"""LINK_CREATE_RATE: how many links a team may make in a window, and
LINK_CREATE_TOKEN_RATE one API token (a script's share of its team's), counted in Redis (slingshot.throttle) so that every worker and
every door shares one budget. Each team counts its own: one team's burst
of creation never takes another's share. Answered 429 with Retry-After and
the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers:
`RateLimit-Policy` and `RateLimit`). The importers and the admin are not
counted: an operator's work, not a door anyone may knock on. While Redis
is away, creation is let through."""

from math import ceil

from django.conf import settings

from slingshot.throttle import admit, parse_rate
from teams.services import default_team


class CreationLimited(Exception):
    """A door made too many links: `who` ("team" or "token") waits `wait` seconds."""

    def __init__(self, *, who: str, limit: int, window: int, wait: float):
        self.who, self.limit, self.window, self.wait = who, limit, window, wait
        seconds = f"{window} seconds" if window != 60 else "a minute"
        super().__init__(
            f"This {who} has made its {limit} links for {seconds}: try again in {ceil(wait)} s (LINK_CREATE_RATE)."
        )

    def headers(self) -> dict[str, str]:
        policy = f"links-per-{self.who}"
        return {
            "Retry-After": str(ceil(self.wait)),
            "RateLimit-Policy": f'"{policy}";q={self.limit};w={self.window}',
            "RateLimit": f'"{policy}";r=0;t={ceil(self.wait)}',
        }


def admit_creation(*, owner, team=None, token=None, count: int = 1) -> None:
    """Counts `count` links about to be made in `team` (the owner's default
    when None), by `token` if one is used; CreationLimited if either has
    made its LINK_CREATE_RATE."""
    counted = []
    if settings.LINK_CREATE_RATE:
        counted.append(("team", f"create-team-{(team or default_team(owner)).pk}", settings.LINK_CREATE_RATE))
    if token is not None and getattr(token, "pk", None) is not None and settings.LINK_CREATE_TOKEN_RATE:
        counted.append(("token", f"create-token-{token.pk}", settings.LINK_CREATE_TOKEN_RATE))
    for who, caller, rate in counted:
        admitted, wait = admit(caller, rate=rate, cost=count)
        if not admitted:
            limit, window = parse_rate(rate)
            raise CreationLimited(who=who, limit=limit, window=window, wait=wait)

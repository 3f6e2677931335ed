"""Reads of raw clicks: which a person sees (teams/access.py's rule, as
links.selectors applies it to links). Reports are clicks/reports.py and
clicks/orphans.py."""

import ipaddress
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from links.selectors import links_visible_to
from links.validation import domain_host
from teams import access

from .enrichment import anonymise
from .models import Click


def clicks_visible_to(
    user: AbstractBaseUser,
    *,
    slug: str | None = None,
    host: str | None = None,
    ip: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> QuerySet[Click]:
    """The clicks of the links the user sees; of one of them with `slug`, on
    the domain of `host` (the default domain for None)."""
    clicks = Click.objects.select_related("agent")
    teams = access.team_ids(user)
    if teams is not None:
        clicks = clicks.filter(link__team__in=teams)
    if slug:
        try:
            host = domain_host(host)
        except ValidationError:
            return clicks.none()
        clicks = clicks.filter(link__in=links_visible_to(user).filter(domain__host=host, slug=slug))
    if ip:
        # Stored whole or anonymised, depending on CLICK_IP_PRIVACY when imported.
        clicks = clicks.filter(ip__in={ip, anonymise(ipaddress.ip_address(ip))})
    if start:
        clicks = clicks.filter(occurred_at__gte=start)
    if end:
        clicks = clicks.filter(occurred_at__lt=end)
    return clicks

"""Reads of links, with the visibility rule in one place: people see their
own links; staff see everyone's."""
import ipaddress
from datetime import datetime

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import BigIntegerField, F, QuerySet
from django.db.models.functions import Coalesce

from clicks.enrichment import anonymise
from clicks.models import Click

from .models import Link


def short_url(slug: str) -> str:
    """Where the edge serves a slug."""
    return settings.EDGE_BASE_URL.rstrip("/") + "/" + slug


def links_visible_to(user: AbstractBaseUser) -> QuerySet[Link]:
    links = Link.objects.all()
    if not user.is_staff:
        links = links.filter(owner=user)
    return links


def with_click_totals(links: QuerySet[Link]) -> QuerySet[Link]:
    """Annotates `clicks` and `human_clicks`, the all-time totals the importer
    keeps per link (one LEFT JOIN, so they can be sorted on)."""
    return links.annotate(
        clicks=Coalesce(F("click_totals__clicks"), 0, output_field=BigIntegerField()),
        human_clicks=Coalesce(F("click_totals__human_clicks"), 0, output_field=BigIntegerField()),
    )


def link_for(*, user: AbstractBaseUser, slug: str) -> Link:
    """Raises Link.DoesNotExist for a slug the user may not see, as for a missing one."""
    return links_visible_to(user).get(slug=slug)


def clicks_visible_to(
    user: AbstractBaseUser, *, slug: str | None = None, ip: str | None = None,
    start: datetime | None = None, end: datetime | None = None,
) -> QuerySet[Click]:
    clicks = Click.objects.select_related("agent")
    if not user.is_staff:
        clicks = clicks.filter(link__owner=user)
    if slug:
        clicks = clicks.filter(link__in=links_visible_to(user).filter(slug=slug))
    if ip:
        # Stored whole or anonymised, depending on CLICK_IP_PRIVACY when imported.
        clicks = clicks.filter(ip__in={ip, anonymise(ipaddress.ip_address(ip))})
    if start:
        clicks = clicks.filter(occurred_at__gte=start)
    if end:
        clicks = clicks.filter(occurred_at__lt=end)
    return clicks

"""Reads for the dashboard pages that the links and clicks selectors do not
already give: the overview's totals, the health of the edge, and a link's
clicks per redirect rule."""

import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser

from clicks.report_queries import Point
from clicks.reports import LinkStats, link_stats
from clicks.selectors import links_and_clicks, with_click_totals
from links.models import Link
from links.rules import Served, served_by
from links.selectors import links_visible_to

OVERVIEW_DAYS = 30


def clicks_per_rule(link: Link, stats: LinkStats) -> list[tuple[Served, int]]:
    """Each way a visit of the link may go (links.rules.served_by) with its
    clicks in the range of `stats` (link_stats of this link alone): the
    `rule` breakdown for the rules and destinations, the rest for the
    link's own url, shown too when a split leaves it no visitor but clicks
    from before the split are in the range. Empty for a link without rules
    or split."""
    if not link.rules and not link.split:
        return []
    counted = dict(stats.breakdowns.get("rule", []))
    rows = [
        (served, counted.get(served.label, 0)) for served in served_by(rules=link.rules, split=link.split, url=link.url)
    ]
    own = stats.clicks - sum(counted.values())
    if rows[-1][0].label:  # a split: no row for the link's own url
        if own > 0:
            rows.append((Served("", "The link's own url", link.url), own))
    else:
        rows[-1] = (rows[-1][0], own)
    return rows


TOP_LINKS = 5


@dataclass(frozen=True)
class Overview:
    links: int
    clicks_today: int
    clicks_7d: int
    clicks_30d: int
    series: list[Point]  # one point per UTC day with clicks, the last 30 days
    top_links: list[tuple[Link, int]]  # (link, all-time clicks), most clicks first


def overview_for(user: AbstractBaseUser, *, now: datetime | None = None) -> Overview:
    """Human clicks of every link the user sees, by UTC day: today, the last
    7 and the last 30 days, today included; and the links with the most
    clicks of all time. A few queries, whatever the number of links."""
    now = now or datetime.now(timezone.utc)
    today = now.astimezone(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    links = links_visible_to(user)
    ids = list(links.values_list("pk", flat=True))
    stats = link_stats(link_ids=ids, start=today - timedelta(days=OVERVIEW_DAYS - 1), end=now, interval="day", top=0)

    top = with_click_totals(links).filter(clicks__gt=0).order_by("-clicks", "pk")[:TOP_LINKS]

    def since(day: datetime) -> int:
        return sum(point.clicks for point in stats.series if point.bucket >= day)

    return Overview(
        links=len(ids),
        clicks_today=since(today),
        clicks_7d=since(today - timedelta(days=6)),
        clicks_30d=stats.clicks,
        series=stats.series,
        top_links=[(link, link.clicks) for link in top],
    )


def overview_version(user: AbstractBaseUser) -> int:
    """All-time clicks of every link the user sees (one query): changes
    whenever the importer stores one of their clicks."""
    return links_and_clicks(links_visible_to(user)).clicks


@dataclass(frozen=True)
class EdgeHealth:
    ok: bool
    detail: str


def edge_health(*, timeout: float = 1.0) -> EdgeHealth:
    """GET of the edge's health check (EDGE_HEALTH_URL)."""
    try:
        with urllib.request.urlopen(settings.EDGE_HEALTH_URL, timeout=timeout) as response:
            body = response.read(300).decode(errors="replace").strip()
            return EdgeHealth(ok=response.status == 200, detail=f"{response.status} {body}".strip())
    except urllib.error.HTTPError as exc:
        return EdgeHealth(ok=False, detail=f"{exc.code} {exc.read(300).decode(errors='replace').strip()}")
    except (urllib.error.URLError, OSError) as exc:
        return EdgeHealth(ok=False, detail=f"unreachable: {getattr(exc, 'reason', exc)}")

"""Visits one by one, newest first, a page at a time: the clicks of some
links, and the orphan visits (sql/clicks.sql). The reports (reports.py,
orphans.py) count them; these list them, for the APIs that show each
visit (Shlink's, api/shlink/visits.py), and say which of some visits are
stored already (an import's dry run, importers/runner.py)."""

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from django.db import connection
from django.db.models import QuerySet

from links.models import Link

from . import clickhouse_history
from .clickhouse_clicks import using_clickhouse
from .clickhouse_export import ClickList
from .clickhouse_visits import ClickHouseClicks, orphan_visits_counted, orphan_visits_rows
from .models import Click
from .selectors import PAGE_ORDER, ClickFilter, links_and_clicks


@dataclass(frozen=True)
class VisitsRange:
    """Which visits: [start, end] (either end open when None), bots or not."""

    start: datetime | None = None
    end: datetime | None = None
    include_bots: bool = True


class Counts(NamedTuple):
    total: int
    bots: int


def link_clicks(links: QuerySet[Link], span: VisitsRange) -> QuerySet[Click]:
    """The clicks of these links in the range, newest first, each with its
    user agent (one query a page). `links` says who sees what: a selector
    of links.selectors, already narrowed to the links asked for. With
    CLICK_STORE=clickhouse, the cluster's clicks, as count() and a slice
    read them (clickhouse_visits.ClickHouseClicks)."""
    if using_clickhouse():
        return ClickHouseClicks(list(links.values_list("pk", flat=True)), span)
    clicks = Click.objects.select_related("agent").filter(link__in=links.values("pk"))
    if span.start:
        clicks = clicks.filter(occurred_at__gte=span.start)
    if span.end:
        clicks = clicks.filter(occurred_at__lte=span.end)
    if not span.include_bots:
        clicks = clicks.filter(is_bot=False)
    return clicks.order_by("-occurred_at", "-click_id")


def selected_clicks(selection: ClickFilter) -> QuerySet[Click] | ClickList:
    """The clicks a ClickFilter selects, newest first and ties by click id,
    each with its user agent: what /api/v1/clicks pages through (DRF's
    CursorPagination, api/clicks.py). With CLICK_STORE=clickhouse, the
    cluster's, as that pagination reads them (clickhouse_export.ClickList)."""
    if using_clickhouse():
        return ClickList(selection)
    return selection.queryset().order_by(*PAGE_ORDER)


def link_click_counts(links: QuerySet[Link]) -> Counts:
    """All-time clicks of these links, and of bots among them, from the
    totals the importer keeps (one query)."""
    totals = links_and_clicks(links)
    return Counts(totals.clicks, totals.clicks - totals.human_clicks)


class OrphanVisit(NamedTuple):
    occurred_at: datetime
    domain: str  # its host; '' the default domain
    slug: str
    kind: str  # slingshot.contract.ORPHAN_KINDS
    user_agent: str
    referer: str
    is_bot: bool
    country: str


def _orphan_where(span: VisitsRange, domain: str | None) -> tuple[str, dict]:
    where = ["true"]
    if span.start:
        where.append("occurred_at >= %(start)s")
    if span.end:
        where.append("occurred_at <= %(end)s")
    if not span.include_bots:
        where.append("NOT is_bot")
    if domain is not None:
        where.append("domain = %(domain)s")
    return " AND ".join(where), {"start": span.start, "end": span.end, "domain": domain}


def orphan_visits_page(*, span: VisitsRange, domain: str | None = None, offset: int, limit: int) -> list[OrphanVisit]:
    """Orphan visits in the range, newest first; on one domain only when
    `domain` is given (its host, '' the default domain: clicks.orphans.orphan_domain)."""
    if using_clickhouse():
        return [OrphanVisit(*row) for row in orphan_visits_rows(span, domain, offset, limit)]
    where, params = _orphan_where(span, domain)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT occurred_at, domain, slug, kind, user_agent, referer, is_bot, country FROM orphan_visits "
            f"WHERE {where} ORDER BY occurred_at DESC, click_id DESC LIMIT %(limit)s OFFSET %(offset)s",
            {**params, "limit": limit, "offset": offset},
        )
        return [OrphanVisit(*row) for row in cursor.fetchall()]


def orphan_visit_counts(*, span: VisitsRange = VisitsRange(), domain: str | None = None) -> Counts:
    if using_clickhouse():
        return Counts(*orphan_visits_counted(span, domain))
    where, params = _orphan_where(span, domain)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*), count(*) FILTER (WHERE is_bot) FROM orphan_visits WHERE {where}", params)
        total, bots = cursor.fetchone()
    return Counts(int(total), int(bots))


def visits_not_stored(ids: list, moments: list[datetime], *, orphans: bool = False) -> int:
    """How many of these visits (click ids, each with the time it was
    served at) `clicks`, or with `orphans` `orphan_visits`, does not hold
    yet: what a dry run of an import would store (one query)."""
    if using_clickhouse():
        return clickhouse_history.visits_not_stored(ids, moments, orphans=orphans)
    table = "orphan_visits" if orphans else "clicks"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM unnest(%s::uuid[], %s::timestamptz[]) v (id, at) WHERE NOT EXISTS "
            f"(SELECT 1 FROM {table} c WHERE c.click_id = v.id AND c.occurred_at = v.at)",
            [ids, moments],
        )
        return cursor.fetchone()[0]

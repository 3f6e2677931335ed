"""Reads of orphan visits: visits to paths that are no link, or to a link
that did not redirect them (docs/contract.md, the kinds)."""

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from links.validation import default_host, domain_host

from . import clickhouse_visits
from .clickhouse_clicks import using_clickhouse
from .report_queries import RawReport, reports_connection

# What each kind of orphan visit means to a person (contract.ORPHAN_KINDS).
ORPHAN_KIND_LABELS = {
    "unknown": "unknown",
    "disabled": "disabled",
    "scheduled": "scheduled",
    "expired": "expired",
    "limit": "past its visit limit",
    "password": "password page",
    "listed": "on a blocklist",
    "blocked": "stopped by staff",
}


class OrphanPath(NamedTuple):
    domain: str  # its host; '' the default domain
    path: str  # the slug asked for
    kind: str  # what the edge found (slingshot.contract's ORPHAN_KINDS)
    visits: int
    bots: int


class OrphanReferrer(NamedTuple):
    referer_host: str  # '' for none
    visits: int
    bots: int


@dataclass(frozen=True)
class OrphanVisits:
    """Visits to paths that are no link, in a range: counts by path, and by referrer host."""

    visits: int
    bots: int
    by_path: list[OrphanPath]
    by_referrer: list[OrphanReferrer]


def orphan_domain(host: str) -> str:
    """How orphan_visits names the domain of `host` as people write it (any
    case, IDN or punycode): '' for the default domain's. Raises
    ValidationError for what cannot be a domain's host."""
    host = domain_host(host.strip())
    return "" if host == default_host() else host


_REFERER_HOST = r"lower(coalesce(substring(referer from '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#:@]+)'), ''))"


def orphan_visits(
    *,
    start: datetime,
    end: datetime,
    include_bots: bool = True,
    domain: str | None = None,
    kind: str | None = None,
    top: int = 50,
) -> OrphanVisits:
    """From the raw orphan_visits (partitioned by month, so a range reads
    only its months), under REPORT_RAW_TIMEOUT_MS like any raw report;
    raises ReportTooLarge past it. `domain`: only the visits on the domain
    of this host ('' the default domain); `kind`: only those of this kind.
    With CLICK_STORE=clickhouse, the cluster's (clickhouse_visits.orphan_report)."""
    if using_clickhouse():
        visits, bots, paths, referrers = clickhouse_visits.orphan_report(
            start, end, include_bots=include_bots, domain=domain, kind=kind, top=top
        )
        return OrphanVisits(
            visits=visits,
            bots=bots,
            by_path=[OrphanPath(*row) for row in paths],
            by_referrer=[OrphanReferrer(*row) for row in referrers],
        )
    where = "occurred_at >= %(start)s AND occurred_at < %(end)s" + ("" if include_bots else " AND NOT is_bot")
    if domain is not None:
        where += " AND domain = %(domain)s"
    if kind is not None:
        where += " AND kind = %(kind)s"
    params = {"start": start, "end": end, "top": top, "domain": domain, "kind": kind}
    grouped = (
        "SELECT {key}, count(*), count(*) FILTER (WHERE is_bot) FROM orphan_visits WHERE "
        + where
        + " GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT %(top)s"
    )
    with RawReport(), reports_connection().cursor() as cursor:
        cursor.execute(f"SELECT count(*), count(*) FILTER (WHERE is_bot) FROM orphan_visits WHERE {where}", params)
        visits, bots = cursor.fetchone()
        cursor.execute(
            "SELECT domain, slug, kind, count(*), count(*) FILTER (WHERE is_bot) FROM orphan_visits WHERE "
            + where
            + " GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2, 3 LIMIT %(top)s",
            params,
        )
        by_path = [OrphanPath(host, path, kind, int(n), int(b)) for host, path, kind, n, b in cursor.fetchall()]
        cursor.execute(grouped.format(key=_REFERER_HOST), params)
        by_referrer = [OrphanReferrer(value, int(n), int(b)) for value, n, b in cursor.fetchall()]
    return OrphanVisits(visits=int(visits), bots=int(bots), by_path=by_path, by_referrer=by_referrer)


def visits_after_the_end(*, host: str, slug: str) -> int:
    """Visits to a link once it had expired or had all its visits (orphan
    visits of kind expired and limit on its slug and domain): those its
    fallback received, or the 410 page. Read from the raw orphan visits by
    their slug's index, under REPORT_RAW_TIMEOUT_MS."""
    if using_clickhouse():
        return clickhouse_visits.visits_after_the_end(orphan_domain(host), slug)
    with RawReport(), reports_connection().cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM orphan_visits WHERE slug = %s AND domain = %s AND kind IN ('expired', 'limit')",
            [slug, orphan_domain(host)],
        )
        return int(cursor.fetchone()[0])

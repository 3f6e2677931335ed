"""Visits one by one from the ClickHouse click store (CLICK_STORE=clickhouse),
as clicks/visits.py lists them from PostgreSQL: a page of links' clicks or
of orphan visits, newest first, and their counts; and the clicks of links
per link and per rule, as the campaign report (campaigns.py) reads them.

The order is PostgreSQL's: newest first to the millisecond, then by click
id as PostgreSQL orders a uuid (its bytes, which its text keeps in order;
ClickHouse orders a UUID by its halves, so the text is what is compared)."""

from datetime import UTC, datetime, timedelta
from typing import NamedTuple
from uuid import UUID

from django.db import connection

from .clickhouse_clicks import MOMENT_MS, cluster, moment_ms, naive_utc
from .clickhouse_deletions import hidden_clicks, orphans_kept
from .clickhouse_reports import raw_execute

NEWEST_FIRST = "ORDER BY occurred_at DESC, occurred_ms DESC, toString(click_id) DESC"
OLDEST_FIRST = "ORDER BY occurred_at, occurred_ms, toString(click_id)"


def _moment(second: datetime, ms: int) -> datetime:
    return second.astimezone(UTC) + timedelta(milliseconds=ms)


def _span_where(span, where: list[str], params: dict) -> None:
    if span.start:
        where.append(f"{MOMENT_MS} >= %(start)s")
        params["start"] = moment_ms(span.start)
    if span.end:
        where.append(f"{MOMENT_MS} <= %(end)s")
        params["end"] = moment_ms(span.end)
    if not span.include_bots:
        where.append("is_bot = 0")


class Agent(NamedTuple):
    user_agent: str


class ClickRow(NamedTuple):
    """A click as the visits lists, the exports and /api/v1/clicks read a
    clicks.models.Click: CLICK_COLUMNS's values (click_rows)."""

    occurred_at: datetime
    click_id: UUID
    link_id: int
    slug: str
    ip: str | None
    country: str
    referer: str
    referer_host: str
    browser: str
    os: str
    device: str
    is_bot: bool
    rule: str | None
    agent_id: int  # 0 when user_agents has none of this id
    agent: Agent


CLICK_COLUMNS = (
    "occurred_at, occurred_ms, click_id, link_id, slug, ip, country, referer, referer_host, browser, os, device,"
    " is_bot, rule, user_agent_id"
)


def click_rows(rows: list[tuple]) -> list[ClickRow]:
    """Rows of CLICK_COLUMNS as clicks, their user agents read from PostgreSQL's
    `user_agents` in one look-up."""
    agents = user_agents_of({row[14] for row in rows})
    return [
        ClickRow(
            _moment(row[0], row[1]),
            *row[2:12],
            bool(row[12]),
            row[13],
            row[14] if row[14] in agents else 0,
            Agent(agents.get(row[14], "")),
        )
        for row in rows
    ]


class ClickHouseClicks:
    """The clicks of some links in a range, newest first: as much of a
    QuerySet as the visits lists use (count() and a slice)."""

    def __init__(self, link_ids: list[int], span):
        where = ["link_id IN %(ids)s"]
        self._params = {"ids": tuple(link_ids) or (0,)}
        _span_where(span, where, self._params)
        where.append(hidden_clicks(link_ids).after(span.start and moment_ms(span.start)).kept(self._params))
        self._where = " AND ".join(where)

    def count(self) -> int:
        return cluster().execute(f"SELECT count() FROM clicks WHERE {self._where}", self._params)[0][0]

    def __getitem__(self, page: slice) -> list[ClickRow]:
        start, stop = page.start or 0, page.stop
        if stop is not None and stop <= start:
            return []
        limit = f" LIMIT {int(start)}, {int(stop - start)}" if stop is not None else f" LIMIT {int(start)}, 1000000"
        return click_rows(
            cluster().execute(
                f"SELECT {CLICK_COLUMNS} FROM clicks WHERE {self._where} {NEWEST_FIRST}{limit}", self._params
            )
        )


def user_agents_of(ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, user_agent FROM user_agents WHERE id = ANY(%s)", [list(ids)])
        return dict(cursor.fetchall())


def _orphan_where(span, domain: str | None) -> tuple[str, dict]:
    params = {}
    where = [orphans_kept(params)]
    _span_where(span, where, params)
    if domain is not None:
        where.append("domain = %(domain)s")
        params["domain"] = domain
    return " AND ".join(where), params


def orphan_visits_rows(span, domain: str | None, offset: int, limit: int) -> list[tuple]:
    """(occurred_at, domain, slug, kind, user_agent, referer, is_bot, country), newest first."""
    where, params = _orphan_where(span, domain)
    rows = cluster().execute(
        "SELECT occurred_at, occurred_ms, domain, slug, kind, user_agent, referer, is_bot, country"
        f" FROM orphan_visits WHERE {where} {NEWEST_FIRST} LIMIT {int(offset)}, {int(limit)}",
        params,
    )
    return [(_moment(row[0], row[1]), *row[2:7], bool(row[7]), row[8]) for row in rows]


def orphan_visits_counted(span, domain: str | None) -> tuple[int, int]:
    where, params = _orphan_where(span, domain)
    ((total, bots),) = cluster().execute(
        f"SELECT count(), countIf(is_bot = 1) FROM orphan_visits WHERE {where}", params
    )
    return total, bots


def clicks_per_link(ids: list[int], start: datetime, end: datetime, include_bots: bool) -> dict[int, int]:
    """Each link's clicks in [start, end) (whole UTC hours), from the hourly
    rollup, or from the raw clicks for the links a deletion hides some of."""
    bots = "" if include_bots else " AND is_bot = 0"
    hidden = hidden_clicks(ids).after(moment_ms(start))
    params = {"start": naive_utc(start), "end": naive_utc(end)}
    found = dict(
        cluster().execute(
            "SELECT link_id, countMerge(clicks) AS c FROM click_rollup_hour WHERE link_id IN %(ids)s"
            f" AND bucket >= %(start)s AND bucket < %(end)s{bots} GROUP BY link_id HAVING c > 0",
            {**params, "ids": tuple(link for link in ids if link not in hidden.before) or (0,)},
        )
    )
    if hidden.before:
        params["ids"] = tuple(hidden.before)
        found.update(
            cluster().execute(
                "SELECT link_id, count() AS c FROM clicks WHERE link_id IN %(ids)s AND occurred_at >= %(start)s"
                f" AND occurred_at < %(end)s{bots} AND {hidden.kept(params)} GROUP BY link_id HAVING c > 0",
                params,
            )
        )
    return found


def clicks_per_rule(ids: list[int], start: datetime, end: datetime, include_bots: bool) -> dict[int, dict[str, int]]:
    """Each link's clicks in [start, end) by the rule or split destination that served them."""
    bots = "" if include_bots else " AND is_bot = 0"
    params = {"ids": tuple(ids) or (0,), "start": naive_utc(start), "end": naive_utc(end)}
    kept = hidden_clicks(ids).after(moment_ms(start)).kept(params)
    found: dict[int, dict[str, int]] = {}
    for link_id, rule, n in cluster().execute(
        "SELECT link_id, rule, count() FROM clicks WHERE link_id IN %(ids)s AND occurred_at >= %(start)s"
        f" AND occurred_at < %(end)s AND rule IS NOT NULL{bots} AND {kept} GROUP BY link_id, rule",
        params,
    ):
        found.setdefault(link_id, {})[rule] = n
    return found


# What PostgreSQL's orphans.py takes a referrer's host to be: the same pattern.
_REFERER_HOST = "lower(extract(referer, '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#:@]+)'))"


def orphan_report(start: datetime, end: datetime, *, include_bots: bool, domain, kind, top: int) -> tuple:
    """What orphans.orphan_visits reads: (visits, bots, [(domain, slug, kind,
    visits, bots)], [(referrer host, visits, bots)]), the lists most first."""
    params = {"start": naive_utc(start), "end": naive_utc(end), "domain": domain, "kind": kind, "top": top}
    where = f"occurred_at >= %(start)s AND occurred_at < %(end)s AND {orphans_kept(params)}"
    where += "" if include_bots else " AND is_bot = 0"
    if domain is not None:
        where += " AND domain = %(domain)s"
    if kind is not None:
        where += " AND kind = %(kind)s"
    counted = "count(), countIf(is_bot = 1)"
    ((visits, bots),) = raw_execute(f"SELECT {counted} FROM orphan_visits WHERE {where}", params)
    by_path = raw_execute(
        f"SELECT domain, slug, toString(kind) AS k, {counted} AS n FROM orphan_visits WHERE {where}"
        " GROUP BY domain, slug, k ORDER BY count() DESC, domain, slug, k LIMIT %(top)s",
        params,
    )
    by_referrer = raw_execute(
        f"SELECT {_REFERER_HOST} AS host, {counted} FROM orphan_visits WHERE {where}"
        " GROUP BY host ORDER BY count() DESC, host LIMIT %(top)s",
        params,
    )
    return visits, bots, by_path, by_referrer


def visits_after_the_end(domain: str, slug: str) -> int:
    """Orphan visits of kind expired and limit on a slug of a domain."""
    params = {"slug": slug, "domain": domain}
    return raw_execute(
        "SELECT count() FROM orphan_visits WHERE slug = %(slug)s AND domain = %(domain)s"
        f" AND kind IN ('expired', 'limit') AND {orphans_kept(params)}",
        params,
    )[0][0]

"""The raw clicks of an export (clicks/export.py) from the ClickHouse click
store (CLICK_STORE=clickhouse): the clicks a selectors.ClickFilter selects,
oldest first, read a block at a time (clickhouse-driver's execute_iter),
each block's user agents looked up in PostgreSQL's `user_agents`, so that
memory stays flat however many clicks there are. The same lines as from
PostgreSQL: times to the millisecond, ties in the order of the click id as
PostgreSQL orders a uuid (its text, as clickhouse_visits.py orders them)."""

import ipaddress
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import chain, islice
from typing import NamedTuple

from .clickhouse_clicks import cluster
from .clickhouse_visits import Agent, user_agents_of
from .selectors import ClickFilter

BLOCK = 2000  # rows a block from the cluster, and clicks a look-up of their user agents
_MOMENT_MS = "(toUInt64(occurred_at) * 1000 + occurred_ms)"
_SELECT = (
    "SELECT occurred_at, occurred_ms, slug, ip, country, referer, referer_host, browser, os, device, is_bot,"
    " user_agent_id FROM clicks WHERE {where}"
    " ORDER BY occurred_at, occurred_ms, toString(click_id)"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ExportedClick(NamedTuple):
    """A click as export.py reads a clicks.models.Click."""

    occurred_at: datetime
    slug: str
    ip: str | None
    country: str
    referer: str
    referer_host: str
    browser: str
    os: str
    device: str
    is_bot: bool
    agent_id: int
    agent: Agent


def _first_ms_at_or_after(moment: datetime) -> int:
    """The first whole millisecond at or after `moment`: a click, kept to the
    millisecond, is at or after `moment` when its millisecond is at or after this."""
    micros = (moment - _EPOCH) // timedelta(microseconds=1)
    return -(-micros // 1000)


def statement(selection: ClickFilter, link_ids: list[int]) -> tuple[str, dict]:
    """The statement reading the selected clicks, and its parameters."""
    where = ["link_id IN %(ids)s"]
    params: dict = {"ids": tuple(link_ids) or (0,)}
    if selection.ips:
        where.append("ip IN %(ips)s")
        params["ips"] = tuple(sorted(str(ipaddress.ip_address(ip)) for ip in selection.ips))
    if selection.start:
        where.append(f"{_MOMENT_MS} >= %(start)s")
        params["start"] = _first_ms_at_or_after(selection.start)
    if selection.end:
        where.append(f"{_MOMENT_MS} < %(end)s")
        params["end"] = _first_ms_at_or_after(selection.end)
    for index, (dimension, value) in enumerate(selection.dimensions):
        where.append(f"{dimension} = %(f{index})s")  # a name of rollups.DIMENSIONS (calendar.checked_filters)
        params[f"f{index}"] = value
    if not selection.include_bots:
        where.append("is_bot = 0")
    return _SELECT.format(where=" AND ".join(where)), params


def export_clicks(selection: ClickFilter) -> Iterator[ExportedClick]:
    """The selected clicks, oldest first. The statement is sent, and its
    first block read, before this returns: a cluster that does not answer
    is ClickHouseUnavailable here, before a response has begun."""
    query, params = statement(selection, selection.link_ids())
    store = cluster()
    store.execute("SELECT 1")  # finds a node that answers, and leaves it first
    # A statement's text holds its link ids; let it be as long as they make it.
    settings = {"max_block_size": BLOCK, "max_query_size": max(262_144, 2 * len(query) + 24 * len(params["ids"]))}
    rows = store.client().execute_iter(query, params, settings=settings)
    first = list(islice(rows, BLOCK))
    return _clicks(chain(first, rows))


def _clicks(rows: Iterator[tuple]) -> Iterator[ExportedClick]:
    while block := list(islice(rows, BLOCK)):
        agents = user_agents_of({row[11] for row in block})
        for row in block:
            agent = agents.get(row[11])
            yield ExportedClick(
                row[0].astimezone(UTC) + timedelta(milliseconds=row[1]),
                *row[2:10],
                bool(row[10]),
                row[11] if agent is not None else 0,
                Agent(agent or ""),
            )

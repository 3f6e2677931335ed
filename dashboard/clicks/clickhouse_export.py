"""The raw clicks of /api/v1/clicks from the ClickHouse click store
(CLICK_STORE=clickhouse): the clicks a selectors.ClickFilter selects.

An export (clicks/export.py) reads them oldest first, a block at a time
(clickhouse-driver's execute_iter), each block's user agents looked up in
PostgreSQL's `user_agents`, so that memory stays flat however many clicks
there are. The API's pages (api/clicks.py) read them newest first through
ClickList, as much of a QuerySet as DRF's CursorPagination uses. Either
gives what PostgreSQL gives: times to the millisecond, ties in the order of
the click id as PostgreSQL orders a uuid (its text, as clickhouse_visits.py
orders them)."""

import ipaddress
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import chain, islice

from .clickhouse_clicks import MOMENT_MS, cluster, moment_ms
from .clickhouse_deletions import hidden_clicks
from .clickhouse_visits import CLICK_COLUMNS, NEWEST_FIRST, OLDEST_FIRST, ClickRow, click_rows
from .selectors import PAGE_ORDER, ClickFilter

BLOCK = 2000  # rows a block from the cluster, and clicks a look-up of their user agents
_SELECT = "SELECT " + CLICK_COLUMNS + " FROM clicks WHERE {where}"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _first_ms_at_or_after(moment: datetime) -> int:
    """The first whole millisecond at or after `moment`: a click, kept to the
    millisecond, is at or after `moment` when its millisecond is at or after this."""
    return -(-_micros(moment) // 1000)


def _where(selection: ClickFilter, link_ids: list[int]) -> tuple[list[str], dict]:
    where = ["link_id IN %(ids)s"]
    params: dict = {"ids": tuple(link_ids) or (0,)}
    if selection.ips:
        where.append("ip IN %(ips)s")
        params["ips"] = tuple(sorted(str(ipaddress.ip_address(ip)) for ip in selection.ips))
    if selection.start:
        where.append(f"{MOMENT_MS} >= %(start)s")
        params["start"] = _first_ms_at_or_after(selection.start)
    if selection.end:
        where.append(f"{MOMENT_MS} < %(end)s")
        params["end"] = _first_ms_at_or_after(selection.end)
    for index, (dimension, value) in enumerate(selection.dimensions):
        where.append(f"{dimension} = %(f{index})s")  # a name of rollups.DIMENSIONS (calendar.checked_filters)
        params[f"f{index}"] = value
    if not selection.include_bots:
        where.append("is_bot = 0")
    where.append(hidden_clicks(link_ids).after(selection.start and moment_ms(selection.start)).kept(params))
    return where, params


def statement(selection: ClickFilter, link_ids: list[int]) -> tuple[str, dict]:
    """The statement reading the selected clicks, oldest first, and its parameters."""
    where, params = _where(selection, link_ids)
    return _SELECT.format(where=" AND ".join(where)) + " " + OLDEST_FIRST, params


def _settings(query: str, params: dict) -> dict:
    # A statement's text holds its link ids; let it be as long as they make it.
    return {"max_block_size": BLOCK, "max_query_size": max(262_144, 2 * len(query) + 24 * len(params["ids"]))}


def export_clicks(selection: ClickFilter) -> Iterator[ClickRow]:
    """The selected clicks, oldest first. The statement is sent, and its
    first block read, before this returns: a cluster that does not answer
    is ClickHouseUnavailable here, before a response has begun."""
    query, params = statement(selection, selection.link_ids())
    store = cluster()
    store.execute("SELECT 1")  # finds a node that answers, and leaves it first
    rows = store.client().execute_iter(query, params, settings=_settings(query, params))
    first = list(islice(rows, BLOCK))
    return _clicks(chain(first, rows))


def _clicks(rows: Iterator[tuple]) -> Iterator[ClickRow]:
    while block := list(islice(rows, BLOCK)):
        yield from click_rows(block)


class ClickList:
    """The selected clicks as DRF's CursorPagination reads a QuerySet ordered
    by selectors.PAGE_ORDER (api/clicks.py): order_by either way, a
    filter before or after a moment, and a slice, each slice one statement."""

    def __init__(self, selection: ClickFilter, *, newest_first: bool = True, bounds: tuple[str, ...] = ()):
        self.selection, self.newest_first, self.bounds = selection, newest_first, bounds

    def order_by(self, *fields: str) -> "ClickList":
        if fields not in (PAGE_ORDER, tuple(field.removeprefix("-") for field in PAGE_ORDER)):
            raise ValueError(f"the cluster's clicks are listed by {PAGE_ORDER}, either way, not by {fields}")
        return ClickList(self.selection, newest_first=fields[0].startswith("-"), bounds=self.bounds)

    def filter(self, **condition: str | datetime) -> "ClickList":
        """occurred_at__lt or occurred_at__gt a moment, as a datetime or its
        text (a cursor's position): a click's whole millisecond compared as
        PostgreSQL compares its microseconds."""
        ((name, value),) = condition.items()
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
        if name == "occurred_at__lt":
            bound = f"{MOMENT_MS} < {_first_ms_at_or_after(moment)}"
        elif name == "occurred_at__gt":
            bound = f"{MOMENT_MS} > {_micros(moment) // 1000}"
        else:
            raise ValueError(f"the cluster's clicks are not filtered by {name}")
        return ClickList(self.selection, newest_first=self.newest_first, bounds=(*self.bounds, bound))

    def __getitem__(self, part: slice) -> list[ClickRow]:
        start, stop = part.start or 0, part.stop
        if part.step is not None or stop is None or start < 0 or stop < start:
            raise ValueError("the cluster's clicks are read a bounded slice at a time")
        where, params = _where(self.selection, self.selection.link_ids())
        query = (
            _SELECT.format(where=" AND ".join([*where, *self.bounds]))
            + " "
            + (NEWEST_FIRST if self.newest_first else OLDEST_FIRST)
            + f" LIMIT {start}, {stop - start}"
        )
        return click_rows(cluster().execute(query, params, settings=_settings(query, params)))

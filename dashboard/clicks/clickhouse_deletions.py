"""Visits deleted while clicks are stored in ClickHouse (CLICK_STORE=clickhouse;
docs/scale-out.md, "Deleting visits"): the cluster keeps the rows, and every
read of it leaves out a link's clicks from before the moment its visits
were last deleted, and the orphan visits from before theirs were.

Why not delete the rows: ClickHouse deletes by mutation, which rewrites
every part that holds a row it deletes, and a link's clicks are in every
part its batches made, so each "Delete its visits" would rewrite most of
the table. What ClickHouse's own lightweight deletes do is this: mark, and
leave out on reading.

The moments live in PostgreSQL (`clickhouse_deletions`, sql/clicks.sql),
one row a link (`ORPHANS`, 0, for the orphan visits), moved only forward.
A read asks them for its links and puts those that matter into its
statement (`Hidden.kept`): only deletions after the start of what it
reads hide anything of it, so a link whose visits were deleted long ago
reads as any other.

What a deletion hides is exact: the clicks of the link from before the
moment, those an importer stores afterwards included (a click still in the
stream when its visits were deleted). A click's moment is the one its edge
stamped it with: an edge whose clock is behind the dashboard's has the
clicks it served in that gap hidden too. The accounting counts them as
deleted, in the hour they were served; the importer leaves them out of the
links' all-time totals, under the lock of the link that a deletion takes."""

import time
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection

from .clickhouse_clicks import MOMENT_MS, cluster

ORPHANS = 0  # the row of the orphan visits

_HIDE = """
INSERT INTO clickhouse_deletions (link_id, before_ms) VALUES (%(link)s, %(ms)s)
ON CONFLICT (link_id) DO UPDATE
SET before_ms = greatest(clickhouse_deletions.before_ms, EXCLUDED.before_ms), deleted_at = now()
"""

# Per hour: the rows kept and those hidden, of those the edges served (not imported ones).
_STORED_BY_HOUR = """
SELECT toUInt32(toStartOfHour(occurred_at)) AS hour, countIf({kept}), countIf(NOT {kept})
FROM {table} WHERE occurred_at >= toDateTime(%(start)s, 'UTC') AND occurred_at < toDateTime(%(end)s, 'UTC')
    AND import_id IS NULL
GROUP BY hour
"""


@dataclass
class Hidden:
    """The moments before which some links' clicks are hidden: {link id: ms}."""

    before: dict[int, int] = field(default_factory=dict)

    def after(self, ms: int | None) -> "Hidden":
        """Those that hide anything from `ms` on (None: from the first click)."""
        return Hidden({link: at for link, at in self.before.items() if ms is None or at > ms})

    def kept(self, params: dict) -> str:
        """A condition true of the rows not hidden (of the table's `link_id`),
        its parameters added to `params`: '1' when none are hidden."""
        if not self.before:
            return "1"
        links = sorted(self.before)
        params["hidden_ids"], params["hidden_ms"] = links, [self.before[link] for link in links]
        return f"{MOMENT_MS} >= arrayElement(%(hidden_ms)s, indexOf(%(hidden_ids)s, link_id))"


def hidden_clicks(link_ids) -> Hidden:
    """The deletions of these links' visits."""
    ids = [link for link in link_ids if link != ORPHANS]
    if not ids:
        return Hidden()
    with connection.cursor() as cursor:
        cursor.execute("SELECT link_id, before_ms FROM clickhouse_deletions WHERE link_id = ANY(%s)", [ids])
        return Hidden(dict(cursor.fetchall()))


def hidden_since(ms: int) -> Hidden:
    """Every link's deletion after `ms`: what a read of every link's clicks from then on leaves out."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT link_id, before_ms FROM clickhouse_deletions WHERE link_id <> %s AND before_ms > %s",
            [ORPHANS, ms],
        )
        return Hidden(dict(cursor.fetchall()))


def orphans_hidden_before() -> int:
    """The moment (ms) before which orphan visits are hidden; 0: none are."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT before_ms FROM clickhouse_deletions WHERE link_id = %s", [ORPHANS])
        found = cursor.fetchone()
    return found[0] if found else 0


def orphans_kept(params: dict) -> str:
    """A condition true of the orphan visits not deleted: '1' when none were."""
    before = orphans_hidden_before()
    if not before:
        return "1"
    params["orphans_before"] = before
    return f"{MOMENT_MS} >= %(orphans_before)s"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def link_visits_hide(cursor, link_id: int) -> int:
    """Hides a link's clicks from before now, in the caller's transaction,
    which must hold the link (FOR UPDATE: no import adds to it meanwhile),
    and sets its all-time totals to the clicks it keeps; returns how many
    it hid that were not hidden before."""
    now = _now_ms()
    before = hidden_clicks([link_id]).before.get(link_id, 0)
    params = {"link": link_id, "from": before, "to": now}
    ((hid,),) = cluster().execute(
        f"SELECT count() FROM clicks WHERE link_id = %(link)s AND {MOMENT_MS} >= %(from)s AND {MOMENT_MS} < %(to)s",
        params,
    )
    ((kept, human),) = cluster().execute(
        f"SELECT count(), countIf(is_bot = 0) FROM clicks WHERE link_id = %(link)s AND {MOMENT_MS} >= %(to)s", params
    )
    cursor.execute(_HIDE, {"link": link_id, "ms": now})
    cursor.execute(
        "INSERT INTO link_click_totals (link_id, clicks, human_clicks) VALUES (%s, %s, %s)"
        " ON CONFLICT (link_id) DO UPDATE SET clicks = EXCLUDED.clicks, human_clicks = EXCLUDED.human_clicks",
        [link_id, kept, human],
    )
    return hid


def orphan_visits_hide(cursor) -> int:
    """Hides the orphan visits from before now, in the caller's transaction;
    returns how many it hid that were not hidden before."""
    now = _now_ms()
    params = {"from": orphans_hidden_before(), "to": now}
    ((hid,),) = cluster().execute(
        f"SELECT count() FROM orphan_visits WHERE {MOMENT_MS} >= %(from)s AND {MOMENT_MS} < %(to)s", params
    )
    cursor.execute(_HIDE, {"link": ORPHANS, "ms": now})
    return hid


def stored_by_hour(start: datetime, end: datetime) -> dict[int, tuple[int, int, int, int]]:
    """Per UTC hour of [start, end) (its epoch): the clicks and orphan
    visits ClickHouse holds that the edges served (not imported ones),
    and those of each that a deletion hides (clickhouse_deletions.py)."""
    found: dict[int, list[int]] = {}
    for place, table in enumerate(("clicks", "orphan_visits")):
        params = {"start": int(start.timestamp()), "end": int(end.timestamp())}
        kept = hidden_since(params["start"] * 1000).kept(params) if place == 0 else orphans_kept(params)
        for hour, count, hidden in cluster().execute(_STORED_BY_HOUR.format(table=table, kept=kept), params):
            counts = found.setdefault(int(hour), [0, 0, 0, 0])
            counts[place] += count
            counts[2 + place] += hidden
    return {hour: tuple(counts) for hour, counts in found.items()}

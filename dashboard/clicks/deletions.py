"""Visits deleted, and the record of them: every statement that deletes
stored clicks or orphan visits adds what it deleted of the visits the
edges served to `click_deletions_hour` (sql/clicks.sql), per hour they were
served in, in the same statement. The accounting (accounting.py) sets that
record beside what is stored, so that a deletion shows as deleted, not as
missing.

What a deletion takes from the accounting's "stored" is counted from what
the statement deleted (RETURNING): of a link's clicks, the clicks of its
hour rollups less its visits imported from other shorteners, as the
accounting counts them; of orphan visits, those not imported.

The record's rows are shared by every deletion, and a transaction may
delete several links (a bulk delete), each touching its own hours: two such
transactions would take the same rows in different orders and deadlock.
So a deletion holds the record (RECORD_LOCK) from before it touches
anything until it commits, and deletions take turns. The importer, which
records the clicks it drops for a deleted link while it holds its batch's
links (importer.py), has rows of its own (`kind` 'dropped') and never
waits for a deletion, which may be waiting for one of those links.

A team's visits past its retention (retention.py) are taken a bounded batch
a transaction: of its raw clicks, the accounting counted only the imported
ones (`imported`, taken from what is stored, since the rollups that counted
them stay); of its hour rollups, every click (`purged`)."""

from .rollups import HOUR_OF, LINK_HOURS_DELETE, PURGED_ROLLUPS, team_rows_before

RECORD_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('slingshot click deletions', 0))"

# Adds to the record, from a source of (bucket, visits) rows, one per hour.
_RECORD = """
INSERT INTO click_deletions_hour AS d (bucket, kind, visits)
SELECT bucket, '{kind}', visits FROM ({source}) s (bucket, visits) WHERE visits > 0 ORDER BY 1
ON CONFLICT (bucket, kind) DO UPDATE SET visits = d.visits + EXCLUDED.visits
"""

_LINK_CLICKS_DELETE = f"""
WITH raw AS (
    DELETE FROM clicks WHERE link_id = %(link)s RETURNING occurred_at, import_id
), hours AS ({LINK_HOURS_DELETE}),
counted (bucket, visits) AS (
    SELECT bucket, clicks FROM hours
    UNION ALL
    SELECT {HOUR_OF.format(moment="occurred_at")}, -count(*) FROM raw WHERE import_id IS NOT NULL GROUP BY 1
), recorded AS ({_RECORD.format(kind="click", source="SELECT bucket, sum(visits) FROM counted GROUP BY 1")})
SELECT count(*) FROM raw
"""

_ORPHAN_VISITS_DELETE = f"""
WITH raw AS (
    DELETE FROM orphan_visits RETURNING occurred_at, import_id
), recorded AS ({
    _RECORD.format(
        kind="orphan",
        source=f"SELECT {HOUR_OF.format(moment='occurred_at')}, count(*) FROM raw WHERE import_id IS NULL GROUP BY 1",
    )
})
SELECT count(*) FROM raw
"""

_TEAM_CLICKS_PURGE = f"""
WITH raw AS (
    DELETE FROM clicks WHERE occurred_at < %(cutoff)s AND (click_id, occurred_at) IN (
        SELECT click_id, occurred_at FROM clicks
        WHERE link_id IN (SELECT id FROM links_link WHERE team_id = %(team)s) AND occurred_at < %(cutoff)s
        LIMIT %(rows)s FOR UPDATE SKIP LOCKED
    ) RETURNING occurred_at, import_id
), recorded AS ({
    _RECORD.format(
        kind="imported",
        source=f"SELECT {HOUR_OF.format(moment='occurred_at')}, count(*) FROM raw WHERE import_id IS NOT NULL GROUP BY 1",
    )
})
SELECT count(*) FROM raw
"""
_TEAM_ROLLUPS_PURGE = {
    table: f"WITH gone AS ({team_rows_before(table, key, before)}) SELECT count(*) FROM gone"
    for table, key, before in PURGED_ROLLUPS[1:]
}
_HOURS_TABLE, _HOURS_KEY, _HOURS_BEFORE = PURGED_ROLLUPS[0]
_TEAM_ROLLUPS_PURGE[_HOURS_TABLE] = f"""
WITH gone AS ({team_rows_before(_HOURS_TABLE, _HOURS_KEY, _HOURS_BEFORE)}),
recorded AS ({_RECORD.format(kind="purged", source="SELECT bucket, sum(clicks) FROM gone GROUP BY 1")})
SELECT count(*) FROM gone
"""

# The clicks of a batch's staging table (importer.py) whose link is gone:
# each once, however often the batch holds it.
_DROPPED_RECORD = _RECORD.format(
    kind="dropped",
    source=f"""
    SELECT {HOUR_OF.format(moment="occurred_at")}, count(*)
    FROM (SELECT DISTINCT click_id, occurred_at FROM click_staging
          WHERE link_id <> ALL(%s::bigint[]) AND import_id IS NULL) dropped
    GROUP BY 1""",
)


def record_hold(cursor) -> None:
    """Holds the record until the caller's transaction ends: the first step
    of a deletion, before it locks the link (a deletion that locked it first
    and then waited for the record could hold up one holding the record and
    waiting for that link). Taken again, it is held already."""
    cursor.execute(RECORD_LOCK)


def link_clicks_delete(cursor, link_id: int) -> int:
    """Deletes a link's raw clicks and hour rollups, and records them, in
    the caller's transaction, which must hold the link (FOR UPDATE, or its
    row deleted) so that no import adds to them meanwhile; the rest of its
    rollups go with rollups.link_delete_rollups. Returns how many raw clicks went."""
    record_hold(cursor)
    cursor.execute(_LINK_CLICKS_DELETE, {"link": link_id})
    return cursor.fetchone()[0]


def orphan_visits_delete_all(cursor) -> int:
    """Deletes every orphan visit, and records them, in the caller's
    transaction; returns how many went. Those an import stores meanwhile
    stay, and are not counted."""
    record_hold(cursor)
    cursor.execute(_ORPHAN_VISITS_DELETE)
    return cursor.fetchone()[0]


def dropped_record(cursor, live: list[int]) -> None:
    """Records the clicks of the batch in `click_staging` whose link is not
    among `live`, in the importer's transaction, which drops them: their
    link was deleted before they were stored."""
    cursor.execute(_DROPPED_RECORD, [live])


def team_clicks_purge(cursor, *, team_id: int, cutoff, rows: int) -> int:
    """Deletes up to `rows` of the team's raw clicks from before `cutoff`,
    and records the imported ones among them, in the caller's transaction;
    returns how many went."""
    record_hold(cursor)
    cursor.execute(_TEAM_CLICKS_PURGE, {"team": team_id, "cutoff": cutoff, "rows": rows})
    return cursor.fetchone()[0]


def team_rollups_purge(cursor, *, table: str, team_id: int, cutoff, rows: int) -> int:
    """Deletes up to `rows` of the team's rows of a rollup table
    (rollups.PURGED_ROLLUPS) from before `cutoff`, recording the clicks of
    hour rows as purged, in the caller's transaction; returns how many rows went."""
    record_hold(cursor)
    cursor.execute(_TEAM_ROLLUPS_PURGE[table], {"team": team_id, "cutoff": cutoff, "rows": rows})
    return cursor.fetchone()[0]

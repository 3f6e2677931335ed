"""Writes to the click tables other than the import itself."""

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction

from links.models import Link
from links.selectors import sees_operations
from teams import access
from teams.audit import record
from teams.models import Action, Role

from .clickhouse_clicks import using_clickhouse
from .clickhouse_deletions import link_visits_hide, orphan_visits_hide
from .deletions import link_clicks_delete, orphan_visits_delete_all, record_hold
from .rollups import link_delete_rollups


def _delete_clicks_of(cursor, link_id: int) -> int:
    """Deletes a link's raw clicks, rollups and totals, recording what the
    accounting counted of them as deleted (deletions.py); returns how many
    clicks went."""
    deleted = link_clicks_delete(cursor, link_id)
    link_delete_rollups(cursor, link_id)
    return deleted


def clicks_deletion_begin(*, link_id: int, **signal) -> None:
    """Takes this transaction's turn at recording deletions (deletions.py)
    before the link is locked: the receiver of links.signals.link_deleting."""
    with connection.cursor() as cursor:
        record_hold(cursor)


def clicks_delete_for_link(*, link_id: int, **signal) -> None:
    """Deletes a link's raw clicks, rollups and totals, in the caller's
    transaction, which must have deleted the link first: the receiver of
    links.signals.link_deleted."""
    with connection.cursor() as cursor:
        _delete_clicks_of(cursor, link_id)


@transaction.atomic
def link_visits_delete(*, link: Link, actor: AbstractBaseUser | None = None) -> int:
    """Deletes every visit of a link that stays: its raw clicks, rollups and
    totals, so that its reports start again from nothing; `actor` must be an
    editor of its team (None: the system). Returns how many clicks went.
    With CLICK_STORE=clickhouse, those PostgreSQL still holds go, and the
    cluster's from before now are hidden (clickhouse_deletions.py).

    The link's row is locked first (FOR UPDATE), which waits for an import
    or a day fold holding it (FOR KEY SHARE, importer.py, rollups.py) and
    holds the next ones back until this commits: the rollups and totals
    agree with the raw clicks after it, and the clicks recorded as deleted
    are those it deleted, no more. The edge's visit counter of a link
    with a limit counts what it served, which this does not undo. Written
    to the team's audit log when it deleted any."""
    if actor is not None:
        access.require(actor, link.team_id, Role.EDITOR, to="delete a link's visits")
    with connection.cursor() as cursor:
        record_hold(cursor)
        cursor.execute(f"SELECT id FROM {Link._meta.db_table} WHERE id = %s FOR UPDATE", [link.pk])
        if cursor.fetchone() is None:
            return 0
        deleted = _delete_clicks_of(cursor, link.pk)
        if using_clickhouse():
            deleted += link_visits_hide(cursor, link.pk)
    if not deleted:
        return 0
    record(
        team_id=link.team_id,
        actor=actor,
        action=Action.LINK_VISITS_DELETED,
        link_id=link.pk,
        slug=link.slug,
        changes={"visits": [deleted, 0]},
    )
    return deleted


@transaction.atomic
def orphan_visits_delete(*, actor: AbstractBaseUser | None = None) -> int:
    """Deletes every orphan visit, recording them as deleted for the
    accounting (deletions.py); `actor` must see the operations reports
    (links.selectors.sees_operations; None: the system). Returns how many went.
    With CLICK_STORE=clickhouse, the cluster's from before now are hidden
    (clickhouse_deletions.py)."""
    if actor is not None and not sees_operations(actor):
        raise PermissionDenied("Orphan visits are for staff and superusers only.")
    with connection.cursor() as cursor:
        deleted = orphan_visits_delete_all(cursor)
        if using_clickhouse():
            deleted += orphan_visits_hide(cursor)
        return deleted

"""Writes to the click tables other than the import itself."""

from django.db import connection

from .rollups import link_delete_rollups


def clicks_delete_for_link(*, link_id: int, **signal) -> None:
    """Deletes a link's raw clicks, rollups and totals, in the caller's
    transaction, which must have deleted the link first: the receiver of
    links.signals.link_deleted."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM clicks WHERE link_id = %s", [link_id])
        link_delete_rollups(cursor, link_id)

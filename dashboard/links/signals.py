"""What links tell the apps above them, which links itself does not know.

`link_deleted` is sent by links.services.link_delete inside its
transaction, after the link's row is gone, with `link_id`: the click
pipeline deletes the link's clicks, rollups and totals (clicks/apps.py), in
the same transaction, so that they go exactly when the link does.
`link_deleting` is sent in the same transaction before the row goes, with
`link_id`: the click pipeline takes its turn at recording deletions then
(clicks/deletions.py), before the link is locked.
`link_changed` is sent by the services inside their transaction with
`link` and `event`: "created" once the link is saved, "updated" after a
change of any of its fields, "deleted" before its row goes (the link as
it was, with its id)."""

from django.dispatch import Signal

link_deleting = Signal()
link_deleted = Signal()
link_changed = Signal()

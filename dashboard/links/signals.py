"""What links tell the apps above them, which links itself does not know.

`link_deleted` is sent by links.services.link_delete inside its
transaction, after the link's row is gone, with `link_id`: the click
pipeline deletes the link's clicks, rollups and totals (clicks/apps.py), in
the same transaction, so that they go exactly when the link does."""

from django.dispatch import Signal

link_deleted = Signal()

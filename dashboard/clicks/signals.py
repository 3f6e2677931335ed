"""What the click pipeline tells the apps above it, which it does not know.

`batch_stored` is sent by the click importer (importer.py) inside a
batch's transaction, after its clicks are written, with `cursor` (that
transaction's) and `batch` (batch.Batch): what a receiver writes with the
cursor commits with the clicks, or not at all."""

from django.dispatch import Signal

batch_stored = Signal()

"""What health tells the apps above it, which it does not know.

`link_broken` is sent by health.services.record inside its transaction
with `link` and `health` (its LinkHealth, as just written) when a check
finds a link's destination broken that was not before: the webhooks make
`link.broken` of it (webhooks/events.py)."""

from django.dispatch import Signal

link_broken = Signal()

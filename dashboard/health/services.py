"""Writing what a check of a link's destination found (health/probe.py):
the link's LinkHealth, and `link_broken` (health/signals.py) when a link
that worked, or was never checked, is found broken."""

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import transaction

from links.models import Link

from .models import LinkHealth, Status
from .signals import link_broken

if TYPE_CHECKING:  # the probe's HTTP client is for check_links, not every process (apps.py)
    from .probe import Outcome


def record(*, link: Link, url: str, outcome: "Outcome", at: datetime) -> LinkHealth:
    """The check of `url` (the link's destination) at `at`, as the link's last. A broken link keeps the
    `broken_since` of the first check of its run of broken ones, whatever
    the reason now; a working one has none."""
    with transaction.atomic():
        health = LinkHealth.objects.select_for_update().filter(link_id=link.pk).first() or LinkHealth(link=link)
        newly_broken = outcome.broken and health.status != Status.BROKEN
        if not outcome.broken:
            broken_since = None
        elif newly_broken:
            broken_since = at
        else:
            broken_since = health.broken_since
        health.link = link
        health.url = url
        health.checked_at = at
        health.status = Status.BROKEN if outcome.broken else Status.OK
        health.reason = outcome.reason
        health.http_status = outcome.http_status
        health.detail = outcome.detail[:300]
        health.final_url = outcome.final_url
        health.broken_since = broken_since
        health.save()
        if newly_broken:
            link_broken.send(sender=LinkHealth, link=link, health=health)
    return health


def forget_other_destination(sender, *, link: Link, event: str, **kwargs) -> None:
    """A link given another destination (links.signals.link_changed) has
    no check until the next round asks the new one, rather than the old
    one's, in the transaction of the change."""
    if event == "updated":
        LinkHealth.objects.filter(link_id=link.pk).exclude(url=link.url).delete()

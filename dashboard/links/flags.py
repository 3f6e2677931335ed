"""Links whose destination was listed after they were made (screening/):
after each reading of the lists, every link's destination, and its rules'
and split's, is looked up again. A link newly listed gets the reason in
Link.listed and is published again, which publishes it disabled (its
target no longer passes links.validation.normalise_target); one no longer
listed gets it cleared and is published as it is. The team sees the flag
on the link's page and in its list."""

import logging

from django.db import transaction

from screening.screen import Screen, current

from .models import Link
from .outbox import publish_link
from .validation import split_host

log = logging.getLogger(__name__)

BATCH = 2000


def reason_of(screen: Screen, link: Link) -> str:
    """Why the link's destination, or a rule's or split's target, is listed; '' if none is."""
    targets = [link.url, *(item.get("url", "") for item in [*(link.rules or []), *(link.split or [])])]
    for url in targets:
        host = split_host(url)
        if host and (listing := screen.listing(host, url)):
            return f"{listing.matched}: {listing.list_name}"[:300]
    return ""


def flag_listed_links(screen: Screen | None = None) -> tuple[int, int]:
    """Looks every link up again: (flagged now, cleared now)."""
    screen = screen if screen is not None else current()
    flagged = cleared = 0
    links = Link.objects.select_related("domain").only("id", "slug", "url", "rules", "split", "listed", "domain__host")
    last = 0
    while True:
        batch = list(links.filter(pk__gt=last).order_by("pk")[:BATCH])
        if not batch:
            break
        last = batch[-1].pk
        changed = []
        for link in batch:
            reason = reason_of(screen, link) if screen else ""
            if reason != link.listed:
                flagged += bool(reason)
                cleared += not reason
                link.listed = reason
                changed.append(link)
        if changed:
            with transaction.atomic():
                Link.objects.bulk_update(changed, ["listed"])
                for link in changed:
                    publish_link(link.domain.host, link.slug)
    if flagged or cleared:
        log.warning("screening: %d links flagged as listed, %d no longer", flagged, cleared)
    return flagged, cleared

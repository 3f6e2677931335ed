"""Links whose destination was listed after they were made (screening/):
after each reading of the lists, every link's destination, and its rules'
and split's, is looked up again. A link newly listed gets the reason in
Link.listed and is published again, `listed`: the edge answers 451 (a
page saying it was stopped) instead of the redirect. One no longer listed
gets it cleared and is published as it is. The team sees the flag
on the link's page and in its list."""

import logging

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet

from screening import lookups
from screening.screen import Screen, current

from .models import Link
from .outbox import publish_link
from .validation import normalise_target, split_host

log = logging.getLogger(__name__)

BATCH = 2000


def targets_of(link: Link) -> list[tuple[str, str, str]]:
    """(field, host, url) of the link's destination and its rules' and split's targets."""
    found = [("url", split_host(link.url), link.url)]
    for name in ("rules", "split"):
        for item in getattr(link, name) or []:
            url = item.get("url", "") if isinstance(item, dict) else ""
            if isinstance(url, str) and url:
                found.append((name, split_host(url), url))
    return [target for target in found if target[1]]


def reason_of(screen: Screen, link: Link) -> str:
    """Why the link's destination, or a rule's or split's target, is listed; '' if none is."""
    for _, host, url in targets_of(link):
        if listing := screen.listing(host, url):
            return f"{listing.matched}: {listing.list_name}"[:300]
    return ""


def check_lookups(link: Link) -> None:
    """Refuses a link whose destination, or a rule's or split's target, a
    lookup lists (Safe Browsing, a DNSBL: screening/lookups.py), as the
    lists' refusal reads: ValidationError on that field."""
    if not lookups.enabled():
        return
    for name, host, url in targets_of(link):
        if found := lookups.hit(host, url):
            raise ValidationError(
                {
                    name: ValidationError(
                        "%(matched)s is listed by %(service)s (%(why)s): links to it are not allowed here.",
                        code="listed",
                        params={"matched": found.matched, "service": found.service, "why": found.why},
                    )
                }
            )


def prefetch_lookups(links: list[Link]) -> None:
    """Asks the lookups about many links' targets at once (a bulk, an
    import), as the links will keep them (what normalise_target refuses
    is refused before any lookup)."""
    if not lookups.enabled():
        return
    targets = []
    for link in links:
        for _, _, url in targets_of(link):
            try:
                kept = normalise_target(url)
            except ValidationError:
                continue
            targets.append((split_host(kept), kept))
    lookups.prefetch(targets)


def flag_listed_links(screen: Screen | None = None, among: QuerySet[Link] | None = None) -> tuple[int, int]:
    """Looks every link (or those `among`) up again: (flagged now, cleared now)."""
    screen = screen if screen is not None else current()
    flagged = cleared = 0
    links = (among if among is not None else Link.objects.all()).select_related("domain")
    links = links.only("id", "slug", "url", "rules", "split", "listed", "domain__host")
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

"""Links whose destination was listed after they were made (screening/):
after each reading of the lists, every link's destination, and its rules'
and split's, is looked up again. A link newly listed gets the reason in
Link.listed and is published again, `listed`: the edge answers 451 (a
page saying it was stopped) instead of the redirect. One no longer listed
gets it cleared and is published as it is. The team sees the flag
on the link's page and in its list."""

import logging
from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet

from screening import lookups
from screening.screen import Screen, current

from .models import OTHER_TARGETS, Link
from .outbox import publish_link
from .validation import normalise_target, split_host

log = logging.getLogger(__name__)

BATCH = 2000
# Links whose targets are asked of the lookups at once (Safe Browsing takes
# 500 URLs a request).
LOOKUP_BATCH = 500
# The end of a flag a lookup set, which a reading of the lists leaves be.
LOOKED_UP = " (lookup)"


def targets_of(link: Link) -> list[tuple[str, str, str]]:
    """(field, host, url) of the link's destination and its rules' and split's targets."""
    found = [("url", split_host(link.url), link.url)]
    for name in OTHER_TARGETS:
        url = getattr(link, name, "")
        if url:
            found.append((name, split_host(url), url))
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


def lookup_reason(link: Link) -> str | None:
    """Why a lookup lists the link's destination, or a rule's or split's
    target, as lookups.prefetch left their answers, ending in LOOKED_UP;
    '' if none does; None if a lookup could not answer for one of them."""
    unsure = False
    for _, host, url in targets_of(link):
        found = lookups.answer(host, url)
        if found:
            return f"{found.matched}: {found.service} ({found.why})"[: 300 - len(LOOKED_UP)] + LOOKED_UP
        unsure = unsure or found is False
    return None if unsure else ""


def _reflag(links: QuerySet[Link], decide: Callable[[Link], str], *, batch_size: int, before=None) -> tuple[int, int]:
    """Sets each link's flag to what `decide` says (after `before` is given
    the batch), publishing those that change: (flagged now, cleared now)."""
    flagged = cleared = 0
    links = links.select_related("domain").only(
        "id", "slug", "url", *OTHER_TARGETS, "rules", "split", "listed", "domain__host"
    )
    last = 0
    while True:
        batch = list(links.filter(pk__gt=last).order_by("pk")[:batch_size])
        if not batch:
            break
        last = batch[-1].pk
        if before is not None:
            before(batch)
        changed = []
        for link in batch:
            reason = decide(link)
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
    return flagged, cleared


def flag_listed_links(screen: Screen | None = None, among: QuerySet[Link] | None = None) -> tuple[int, int]:
    """Looks every link (or those `among`) up again in the lists: (flagged
    now, cleared now). A flag a lookup set stays until the next lookup."""
    screen = screen if screen is not None else current()

    def decide(link: Link) -> str:
        reason = reason_of(screen, link) if screen else ""
        return reason or (link.listed if link.listed.endswith(LOOKED_UP) else "")

    flagged, cleared = _reflag(among if among is not None else Link.objects.all(), decide, batch_size=BATCH)
    if flagged or cleared:
        log.warning("screening: %d links flagged as listed, %d no longer", flagged, cleared)
    return flagged, cleared


def relookup_links(screen: Screen | None = None) -> tuple[int, int]:
    """Asks the lookups (Safe Browsing, DNSBLs) about every active link's
    targets again, LOOKUP_BATCH at a time: (flagged now, cleared now)."""
    if not lookups.enabled():
        return 0, 0
    screen = screen if screen is not None else current()
    lookups.forget()  # their answers now, not those kept for ten minutes

    def decide(link: Link) -> str:
        found = lookup_reason(link)
        if found is None:  # a lookup that failed clears no flag of its own
            found = link.listed if link.listed.endswith(LOOKED_UP) else ""
        return (reason_of(screen, link) if screen else "") or found

    flagged, cleared = _reflag(
        Link.objects.filter(is_active=True), decide, batch_size=LOOKUP_BATCH, before=prefetch_lookups
    )
    log.warning("screening: looked every link up again: %d flagged as listed, %d no longer", flagged, cleared)
    return flagged, cleared

"""A round of `manage.py check_links`: every active link whose destination
is due a check (health.selectors.due_links), read in chunks of CHUNK in id
order; in a chunk each distinct URL is asked once (health/probe.py), the
URLs of one host by one thread in turn, up to WORKERS hosts at once; what
each found is written by this thread (health.services.record) as it
comes, so that a round stopped half-way keeps what it learnt and leaves
the rest due."""

import logging
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from links.models import Link

from . import services
from .probe import HostTurns, Outcome, Prober, Stopped, host_of
from .selectors import due_links

log = logging.getLogger(__name__)

CHUNK = 1000
# Hosts asked at once: the checks wait on the network, never on this CPU.
WORKERS = 4


@dataclass
class Summary:
    checked: int = 0
    broken: int = 0
    newly_broken: int = 0


def check_round(*, every: timedelta | None, stop: threading.Event | None = None) -> Summary:
    """Checks every link due as the round starts: last checked `every` ago
    or more, or never (None: every active link, once)."""
    stop = stop or threading.Event()
    started = timezone.now()
    turns = HostTurns(settings.LINK_HEALTH_HOST_INTERVAL, stop)
    summary, after = Summary(), 0
    while not stop.is_set():
        due = due_links(started=started, every=every, after=after, limit=CHUNK)
        if not due:
            break
        after = due[-1][0]
        _check_chunk(due, turns, summary)
    return summary


def _check_chunk(due: list[tuple[int, str]], turns: HostTurns, summary: Summary) -> None:
    links_of: dict[str, list[int]] = {}
    for pk, url in due:
        links_of.setdefault(url, []).append(pk)
    urls_of: dict[str, list[str]] = {}
    for url in links_of:
        urls_of.setdefault(host_of(url), []).append(url)
    found: queue.Queue[tuple[str, Outcome]] = queue.Queue()
    with ThreadPoolExecutor(max_workers=min(WORKERS, len(urls_of)), thread_name_prefix="check_links") as pool:
        futures = [pool.submit(_check_host, urls, turns, found) for urls in urls_of.values()]
        while True:
            try:
                url, outcome = found.get(timeout=0.1)
            except queue.Empty:
                if all(future.done() for future in futures) and found.empty():
                    break
                continue
            _record(url, links_of[url], outcome, summary)
    for future in futures:
        _raise_unexpected(future)


def _check_host(urls: list[str], turns: HostTurns, found: queue.Queue) -> None:
    prober = Prober(
        turns=turns, timeout=settings.LINK_HEALTH_TIMEOUT, private_addresses=settings.LINK_HEALTH_ALLOW_PRIVATE
    )
    try:
        for url in urls:
            try:
                found.put((url, prober.check(url)))
            except Stopped:
                return
            except Exception:  # a fault of ours with one URL: the others are checked, it stays due
                log.exception("check_links: checking %s failed", url[:200])
    finally:
        prober.close()


def _raise_unexpected(future: Future) -> None:
    exc = future.exception()
    if exc is not None:
        raise exc


def _record(url: str, link_ids: list[int], outcome: Outcome, summary: Summary) -> None:
    """What the check of `url` found, for each of its links that still has it."""
    at = timezone.now()
    for link in Link.objects.filter(pk__in=link_ids, url=url).select_related("domain"):
        health = services.record(link=link, url=url, outcome=outcome, at=at)
        summary.checked += 1
        summary.broken += outcome.broken
        summary.newly_broken += outcome.broken and health.broken_since == at
    if outcome.broken:
        log.info("check_links: %s is broken (%s): %s", url[:200], outcome.reason, outcome.detail)

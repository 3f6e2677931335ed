"""An import, from a source (importers/sources/) into a team: its links,
then their visits, then the orphan visits.

Links. Each, prepared by importers/preparing.py (its domain here, its
options cut to what a link may hold), is created through
links.services.link_bulk_create, as any link is (validated, audited, published through the outbox), by the job's
owner, with its creation time kept and a row of ImportedLink naming it by
the source's id. A link imported before (found in ImportedLink) is left as
it is: only its new visits are added. A link whose slug another link has
on its domain is a clash: reported, never overwritten, its visits left
out. A link asking for a password, which no source gives back, is
imported disabled. A link with a visit limit gets the edge's counter
(contract.VISITS_KEY_PREFIX) set to the visits the source counted, in the
same transaction, before the publisher can let the edge serve it.

Visits go through importers/history.py in batches, each stored and
counted in one transaction; `progress` records, after each, how many the
source gave so far, from which a run taken over goes on. A visit stored
before is not stored again, so a second run adds nothing.

A dry run reads everything and writes nothing, and says what a run would do.
"""

import logging
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from itertools import islice

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction

from clicks.clickhouse_history import history_store
from clicks.enrichment import Enricher
from clicks.partitions import months_before
from clicks.rollups import add_carried_totals
from clicks.visits import visits_not_stored
from links.domains import default_domain
from links.fields import LinkFields
from links.models import Domain
from links.selectors import taken_slugs
from links.services import Outcome, link_bulk_create
from links.validation import default_host
from slingshot.contract import VISITS_KEY_PREFIX
from slingshot.redis import get_redis
from teams import access
from teams.models import Role

from .ahead import ahead
from .history import HistoryBatches, Orphan, Target, Visit
from .models import ImportedLink, ImportJob
from .preparing import LinkPreparer
from .sources.base import Source, SourceLink, read
from .summary import Summary

log = logging.getLogger(__name__)

LINKS_CHUNK = 500
VISITS_BATCH = 50_000
FUTURE = timedelta(days=1)

Progress = Callable[[str, int, int | None], None]  # (phase, done, total or None)


class ImportRun:
    def __init__(self, *, job: ImportJob, source: Source, progress: Progress = lambda phase, done, total: None):
        self.job, self.source, self.progress = job, source, progress
        self.summary = Summary(dry_run=job.dry_run, lists_visits=source.lists_visits)
        self.targets: dict[str, Target] = {}  # external id -> where its visits go
        self.expected_visits = 0
        self.now = datetime.now(timezone.utc)

    def run(self) -> Summary:
        if self.job.owner is None:
            raise PermissionDenied("The person who started this import is gone.")
        access.require(self.job.owner, self.job.team_id, Role.EDITOR, to="import links")
        self.chosen = self.job.domain or default_domain()
        self.links()
        if self.source.lists_visits:
            self.batches = HistoryBatches(
                # The team's links all keep an address as it chose.
                enricher=Enricher(ip_privacy=self.job.team.ip_storage_in_effect, enabled=settings.CLICK_ENRICH),
                import_id=self.job.pk,
                source_key=self.source.key,
            )
            self.store = history_store()
            self.visits()
            self.orphans()
        return self.summary

    # --- links ------------------------------------------------------------------------

    def links(self) -> None:
        prepare = LinkPreparer(
            chosen=self.chosen,
            domains={domain.host: domain for domain in Domain.objects.all()},
            source_default_host=lambda: self._source_default_host,
            summary=self.summary,
            dry_run=self.job.dry_run,
        ).prepare
        seen: set[str] = set()
        links = (
            item
            for item in read(self.source, self.source.links())
            if not (item.external_id in seen or seen.add(item.external_id))
        )
        while chunk := list(islice(links, LINKS_CHUNK)):
            self.summary.links_read += len(chunk)
            known = {
                row.external_id: row
                for row in ImportedLink.objects.filter(
                    source_key=self.source.key, external_id__in=[item.external_id for item in chunk]
                ).select_related("link")
            }
            fresh = []
            for item in chunk:
                if item.external_id in known:
                    self._there(item, known[item.external_id])
                else:
                    prepared = prepare(item)
                    if prepared is not None:
                        fresh.append(prepared)
            self._create(self._without_clashes(fresh))
            self.progress("links", self.summary.links_read, None)

    def _there(self, item: SourceLink, imported: ImportedLink) -> None:
        if imported.job_id == self.job.pk:  # made by this job before the worker it took over from died
            self.summary.links_created += 1
            self.summary.carried_clicks += imported.carried_clicks
        else:
            self.summary.links_there += 1
        link = imported.link
        self.targets[item.external_id] = Target(link.pk, link.slug, item.external_id)
        self.expected_visits += item.visits
        more = item.carried_clicks - imported.carried_clicks
        if more > 0:
            self.summary.carried_clicks += more
            if not self.job.dry_run:
                with transaction.atomic(), connection.cursor() as cursor:
                    add_carried_totals(cursor, {link.pk: more})
                    ImportedLink.objects.filter(pk=imported.pk).update(carried_clicks=item.carried_clicks)

    def _without_clashes(self, prepared: list[tuple[SourceLink, LinkFields]]) -> list[tuple[SourceLink, LinkFields]]:
        taken = taken_slugs(slugs=((fields.domain.pk, fields.slug) for _, fields in prepared if fields.slug))
        kept = []
        for item, fields in prepared:
            where = (fields.domain.pk, fields.slug)
            if fields.slug and where in taken:
                self._clash(item, fields)
            else:
                taken.add(where)  # a second link of the source with the same slug clashes with the first
                kept.append((item, fields))
        return kept

    def _clash(self, item: SourceLink, fields: LinkFields) -> None:
        self.summary.listed("clashes", {"slug": fields.slug, "domain": fields.domain.host, "url": item.url})

    def _create(self, prepared: list[tuple[SourceLink, LinkFields]]) -> None:
        if self.job.dry_run:
            self.summary.links_created += len(prepared)
            for item, _ in prepared:
                self.targets[item.external_id] = Target(0, item.slug, item.external_id)
                self.expected_visits += item.visits
                self.summary.carried_clicks += item.carried_clicks
            return
        if not prepared:
            return
        with transaction.atomic():
            results = link_bulk_create(owner=self.job.owner, items=[(fields, self.job.team) for _, fields in prepared])
            made, counters, carried, created = [], {}, {}, {}
            for (item, fields), result in zip(prepared, results, strict=True):
                if result.outcome is Outcome.FORBIDDEN:
                    raise PermissionDenied(" ".join(result.errors["team"]))
                if result.outcome is Outcome.SLUG_TAKEN:
                    self._clash(item, fields)
                    continue
                if result.outcome is Outcome.INVALID:
                    self.summary.listed("invalid", {"slug": item.slug, "errors": result.errors})
                    continue
                link = result.link
                made.append(
                    ImportedLink(source_key=self.source.key, external_id=item.external_id, link=link, job=self.job)
                )
                made[-1].carried_clicks = item.carried_clicks
                if item.created_at is not None:
                    created[link.pk] = item.created_at
                if link.max_visits and item.visits:
                    counters[VISITS_KEY_PREFIX + str(link.pk)] = item.visits
                if item.carried_clicks:
                    carried[link.pk] = item.carried_clicks
                self.targets[item.external_id] = Target(link.pk, link.slug, item.external_id)
                self.expected_visits += item.visits
                self.summary.links_created += 1
                self.summary.carried_clicks += item.carried_clicks
            ImportedLink.objects.bulk_create(made)
            with connection.cursor() as cursor:
                add_carried_totals(cursor, carried)
                if created:  # the times the source made them at
                    cursor.execute(
                        "UPDATE links_link l SET created_at = c.at FROM unnest(%s::bigint[], %s::timestamptz[]) c (id, at)"
                        " WHERE l.id = c.id",
                        [list(created), list(created.values())],
                    )
            if counters:
                # Before the commit, and so before the publisher lets an edge
                # serve the link: no visit can have counted yet.
                get_redis().mset(counters)

    # --- visits -------------------------------------------------------------------------

    def _time_filter(self) -> Callable[[int], str | None]:
        """What keeps a visit out by its time: 'too_old', 'future', or None."""
        months = settings.CLICK_RETENTION_MONTHS
        oldest = int(months_before(self.now, months).timestamp() * 1000) if months > 0 else None
        newest = int((self.now + FUTURE).timestamp() * 1000)

        def why(ms: int) -> str | None:
            if ms <= 0 or (oldest is not None and ms < oldest):  # 0: the source gave no time
                return "too_old"
            return "future" if ms > newest else None

        return why

    def _batched(self, items: Iterator, *, key: str, ms: Callable) -> Iterator[tuple[list, int]]:
        """Lists of at most VISITS_BATCH of the items whose time is kept,
        each with how many items the source gave for it; those left out for
        their time are counted in the summary."""
        why = self._time_filter()
        kept, given = [], 0
        for item in items:
            given += 1
            reason = why(ms(item))
            if reason is not None:
                name = f"{key}_{reason}"
                setattr(self.summary, name, getattr(self.summary, name) + 1)
                continue
            kept.append(item)
            if len(kept) >= VISITS_BATCH:
                yield kept, given
                kept, given = [], 0
        if kept or given:
            yield kept, given

    def _stored(self, key: str, batches: Iterator[tuple[list, int]], make: Callable, total: int | None) -> None:
        """Stores each batch (a dry run: counts what it would store) and
        records how far the source was read. The batches are read and made
        in a thread of their own (importers/ahead.py) while the one before
        is stored, so that PostgreSQL and Python work at once."""
        done = self.job.progress.get(f"{key}_consumed", 0)
        if self.job.dry_run:
            for kept, given in batches:
                setattr(
                    self.summary,
                    f"{key}_stored",
                    getattr(self.summary, f"{key}_stored") + self._would_store(*make(kept)),
                )
                done += given
                self.progress(key, done, _at_least(total, done))
            return
        for batch, given in ahead((self.batches.make(*make(kept)) if kept else None, given) for kept, given in batches):
            if batch is not None:
                setattr(self.summary, f"{key}_stored", getattr(self.summary, f"{key}_stored") + self.store.store(batch))
            self._consumed(key, given, getattr(self.summary, f"{key}_stored"))
            done += given
            self.progress(key, done, _at_least(total, done))

    def visits(self) -> None:
        summary = self.summary
        skip = self.job.progress.get("visits_consumed", 0)
        summary.visits_read += skip  # by the run this one took over from, as what follows
        summary.visits_stored += self.job.progress.get("visits_stored", 0)
        targets = self.targets
        pairs = (
            (targets[external_id], visit)
            for external_id, visit in read(self.source, self.source.visits(wanted=targets.__contains__, skip=skip))
        )
        batches = self._batched(self._read(pairs, "visits_read"), key="visits", ms=_pair_ms)
        self._stored("visits", batches, lambda kept: (kept, ()), self.expected_visits or None)
        summary.visits_left_out += self.source.left_out

    def orphans(self) -> None:
        skip = self.job.progress.get("orphans_consumed", 0)
        self.summary.orphans_read += skip
        self.summary.orphans_stored += self.job.progress.get("orphans_stored", 0)
        orphans = (self._orphan(orphan) for orphan in read(self.source, self.source.orphan_visits(skip=skip)))
        batches = self._batched(self._read(orphans, "orphans_read"), key="orphans", ms=_orphan_ms)
        self._stored("orphans", batches, lambda kept: ((), kept), None)

    def _read(self, items: Iterator, counter: str) -> Iterator:
        for item in items:
            setattr(self.summary, counter, getattr(self.summary, counter) + 1)
            yield item

    def _orphan(self, orphan: Orphan) -> Orphan:
        """The orphan visit with its domain as orphan_visits names it."""
        host = orphan.domain
        if not host or host == self._source_default_host:
            host = "" if self.chosen.is_default else self.chosen.host
        elif host == default_host():
            host = ""
        return orphan._replace(domain=host) if host != orphan.domain else orphan

    @property
    def _source_default_host(self) -> str | None:
        if not hasattr(self, "_default_host"):
            self._default_host = self.source.default_host()
        return self._default_host

    def _consumed(self, phase: str, given: int, stored: int) -> None:
        """Records, once a batch is stored, how many visits the source gave
        so far, and how many were new: where a run taken over goes on from."""
        if not self.job.dry_run:
            progress = self.job.progress
            progress[f"{phase}_consumed"] = progress.get(f"{phase}_consumed", 0) + given
            progress[f"{phase}_stored"] = stored
            ImportJob.objects.filter(pk=self.job.pk).update(progress=progress)

    def _would_store(self, visits: list[tuple[Target, Visit]], orphans: list[Orphan]) -> int:
        """How many of these a run would store: all of a link not created
        yet, and those not stored before."""
        ids, moments = [], []
        new = 0
        for target, visit in visits:
            if not target.link_id:
                new += 1
                continue
            ids.append(self.batches.visit_id(target.scope, visit.key, visit.ms))
            moments.append(datetime.fromtimestamp(visit.ms / 1000, tz=timezone.utc))
        for orphan in orphans:
            ids.append(self.batches.visit_id("", orphan.key, orphan.ms))
            moments.append(datetime.fromtimestamp(orphan.ms / 1000, tz=timezone.utc))
        if ids:
            new += visits_not_stored(ids, moments, orphans=bool(orphans))
        return new


def _at_least(total: int | None, done: int) -> int | None:
    """The visits a source counted, which its list may outgrow (a YOURLS
    log longer than its counters): never less than those read."""
    return max(total, done) if total else None


def _pair_ms(pair: tuple[Target, Visit]) -> int:
    return pair[1].ms


def _orphan_ms(orphan: Orphan) -> int:
    return orphan.ms

"""Visits of the past, as the click pipeline stores live clicks.

A source's visits (importers/sources/) become a clicks.batch.Batch: each
visit's facts from the same Enricher as a live click's (browser, OS,
device, bot, referrer host, country, the address as the team keeps it:
Team.ip_storage, else CLICK_IP_PRIVACY), laid out in the same columns,
with a visitor row per click. The batch is stored by the click importer's
own store step (clicks.importer.ClickImporter.store, or the cluster's with
CLICK_STORE=clickhouse: clicks.clickhouse_history.history_store): partitions made for its months, new
user agents added, the clicks inserted, and the new ones counted into the
hour and day rollups and the totals (clicks.rollups.BREAKDOWN_OF_NEW), in
one transaction; a visit stored before is neither stored nor counted
again. What differs from a live click:

- its time is the source's: no MAX_CLICK_AGE (clicks/batch.py refuses
  older live clicks); the runner leaves out what CLICK_RETENTION_MONTHS
  would drop and what lies in the future;
- its id is a hash of the source, the link (its id here and there) and
  the visit's key (`visit_id`), so that importing again stores nothing
  twice;
- the country and the bot flag the source recorded, when it did, win over
  what the address and the user agent say (the source saw the visit);
- each row carries the import's id (clicks.batch.IMPORT_COLUMN), which the
  accounting leaves out: no edge served these visits.
"""

from array import array
from collections import Counter
from collections.abc import Iterable
from datetime import date, timedelta
from hashlib import blake2b
from typing import NamedTuple

from clicks.batch import NULL, Batch
from clicks.enrichment import Enricher
from clicks.rollups import HOUR_MS, breakdown_rows, copy_text, visitor_rows

DAY_S = 86_400


class Visit(NamedTuple):
    """A visit of a link as a source has it."""

    key: str  # what tells it from the link's other visits at the source
    ms: int  # when, in Unix milliseconds
    ip: str = ""
    user_agent: str = ""
    referer: str = ""
    country: str = ""  # ISO 3166 alpha-2 as the source found it; '': look it up from the address
    bot: bool = False  # the source took it for a bot's


class Orphan(NamedTuple):
    """A visit to a path that was no link, as a source has it."""

    key: str
    ms: int
    path: str  # the path asked for, without its leading slash
    domain: str  # as orphan_visits names it: its host, '' the default domain
    ip: str = ""
    user_agent: str = ""
    referer: str = ""
    country: str = ""
    bot: bool = False


class Target(NamedTuple):
    """The link a source's visits go to."""

    link_id: int
    slug: str
    external_id: str  # the link's id at the source

    @property
    def scope(self) -> str:
        """What makes its visits' ids (visit_ids) apart from another link's."""
        return f"{self.link_id}/{self.external_id}"


def visit_ids(source_key: str):
    """A function of (a link's id at the source, a visit's key, its time in
    Unix ms) giving the visit's click id: 32 hex digits, which PostgreSQL
    reads as a uuid, stable across runs and hosts. The time leads (48 bits,
    as in a UUIDv7), so that visits stored in time order go to the end of
    the primary key's index rather than all over it; a hash of the source,
    the link and the key makes the other 80 bits."""
    base = blake2b(source_key.encode("utf-8", "surrogatepass"), digest_size=10, person=b"slingshot-visit")
    links: dict[str, object] = {}

    def visit_id(external_id: str, key: str, ms: int) -> str:
        prefix = links.get(external_id)
        if prefix is None:
            if len(links) > 100_000:
                links.clear()
            prefix = base.copy()
            prefix.update(b"\x00" + external_id.encode("utf-8", "surrogatepass") + b"\x00")
            links[external_id] = prefix
        digest = prefix.copy()
        digest.update(key.encode("utf-8", "surrogatepass"))
        return f"{ms:012x}{digest.hexdigest()}"

    return visit_id


class HistoryBatches:
    """Makes batches of visits of the past for one import. The rows of an
    address, a user agent or a referrer are made once and kept, as
    clicks.batch.BatchMaker keeps them."""

    CACHE_MAX = 100_000

    def __init__(self, *, enricher: Enricher, import_id: int, source_key: str):
        self.enricher = enricher
        self.import_id = import_id
        self.visit_id = visit_ids(source_key)
        self._ips: dict[str, tuple] = {}
        self._agents: dict[str, tuple] = {}
        self._referers: dict[str, tuple] = {}
        self._days: dict[int, str] = {}
        self._end = f"\t{import_id}\n"

    # --- the facts of raw values, cached --------------------------------------------

    def _ip(self, raw: str) -> tuple[str, str, int]:
        """(COPY text of the address as kept, its country, its network's hash)."""
        facts = self.enricher.ip(raw)
        row = (NULL if facts.stored is None else facts.stored, facts.country, facts.network_hash)
        self._ips[raw] = row
        return row

    def _agent(self, raw: str) -> tuple[int, str, bool, str, str, tuple]:
        """(id, COPY text of browser, os and device, bot, the user agent as
        stored, its COPY text, and the breakdown's key of its classes for a
        human's visit and a bot's: rollups.breakdown_rows)."""
        facts = self.enricher.agent(raw)
        text = "\t".join(copy_text(value) for value in (facts.browser, facts.os, facts.device))
        classes = tuple((facts.browser, facts.os, facts.device, bot) for bot in (False, True))
        row = (facts.agent_hash, text, facts.is_bot, facts.user_agent, copy_text(facts.user_agent), classes)
        self._agents[raw] = row
        return row

    def _referer(self, raw: str) -> tuple[str, str, str]:
        """(COPY text of the referrer, its host, the host's COPY text)."""
        facts = self.enricher.referer(raw)
        row = (copy_text(facts.referer), facts.host, copy_text(facts.host))
        self._referers[raw] = row
        return row

    def _moment(self, ms: int) -> str:
        """COPY text of a timestamptz to the millisecond (UTC)."""
        seconds, millis = divmod(ms, 1000)
        day, second = divmod(seconds, DAY_S)
        prefix = self._days.get(day)
        if prefix is None:
            prefix = self._days[day] = _day_text(day)
        hours, second = divmod(second, 3600)
        minutes, second = divmod(second, 60)
        return f"{prefix} {hours:02d}:{minutes:02d}:{second:02d}.{millis:03d}+00"

    @staticmethod
    def _country(given: str, found: str) -> str:
        if len(given) == 2 and given.isascii() and given.isalpha():
            return given.upper()
        return found

    # --- a batch ---------------------------------------------------------------------

    def make(self, visits: Iterable[tuple[Target, Visit]], orphans: Iterable[Orphan] = ()) -> Batch:
        for cache in (self._ips, self._agents, self._referers, self._days):
            if len(cache) > self.CACHE_MAX:
                cache.clear()
        batch = Batch(entries=[], import_id=self.import_id)
        click_lines, orphan_lines = [], []
        agent_keys, host_keys, country_keys = [], [], []
        visitors: dict[tuple, set[int]] = {}  # by link, hour and bot
        click_visitors = array("q")  # each click's, for a click store that rolls up itself
        ips, agents, referers = self._ips, self._agents, self._referers
        visit_id, moment, country_of, end = self.visit_id, self._moment, self._country, self._end
        first = last = None
        for target, visit in visits:
            ip_text, found_country, network_hash = ips.get(visit.ip) or self._ip(visit.ip)
            agent_hash, agent_text, agent_bot, stored_agent, _, classes = agents.get(visit.user_agent) or self._agent(
                visit.user_agent
            )
            referer_text, host, host_text = referers.get(visit.referer) or self._referer(visit.referer)
            country = country_of(visit.country, found_country)
            is_bot = visit.bot or agent_bot
            bot = "t" if is_bot else "f"
            link = target.link_id
            # A slug (links/slugs.py) and a country (two letters, or the enricher's word) need no escaping.
            click_lines.append(
                f"{visit_id(target.scope, visit.key, visit.ms)}\t{moment(visit.ms)}\t{target.slug}\t{link}"
                f"\t{ip_text}\t{country}\t{agent_hash}\t{agent_text}\t{bot}\t{referer_text}"
                f"\t{host_text}\t{NULL}{end}"
            )
            batch.agents[agent_hash] = stored_agent
            batch.link_ids.add(link)
            hour = visit.ms // HOUR_MS
            visitors.setdefault((link, hour, is_bot), set()).add(network_hash ^ agent_hash)
            click_visitors.append(network_hash ^ agent_hash)
            agent_keys.append((link, hour, classes[is_bot]))
            host_keys.append((link, hour, host, is_bot))
            country_keys.append((link, hour, country, is_bot))
            first = visit.ms if first is None or visit.ms < first else first
            last = visit.ms if last is None or visit.ms > last else last
        for orphan in orphans:
            ip_text, found_country, _ = ips.get(orphan.ip) or self._ip(orphan.ip)
            _, _, agent_bot, _, agent_text, _ = agents.get(orphan.user_agent) or self._agent(orphan.user_agent)
            referer_text, _, _ = referers.get(orphan.referer) or self._referer(orphan.referer)
            bot = "t" if orphan.bot or agent_bot else "f"
            orphan_lines.append(
                f"{visit_id('', orphan.key, orphan.ms)}\t{moment(orphan.ms)}\t{copy_text(orphan.path)}\t{ip_text}"
                f"\t{copy_text(country_of(orphan.country, found_country))}\t{agent_text}\t{bot}\t{referer_text}"
                f"\tunknown\t{copy_text(orphan.domain)}{end}"
            )
            first = orphan.ms if first is None or orphan.ms < first else first
            last = orphan.ms if last is None or orphan.ms > last else last
        batch.clicks, batch.orphans = len(click_lines), len(orphan_lines)
        batch.first_ms, batch.last_ms = first, last
        batch.click_rows = "".join(click_lines).encode("utf-8", "replace")
        batch.orphan_rows = "".join(orphan_lines).encode("utf-8", "replace")
        batch.click_visitors = click_visitors.tobytes()
        batch.visitor_rows = visitor_rows((*key, hashes) for key, hashes in visitors.items())
        batch.breakdown_rows = breakdown_rows(_breakdown(agent_keys, host_keys, country_keys))
        return batch


def _breakdown(agent_keys: list[tuple], host_keys: list[tuple], country_keys: list[tuple]) -> dict[tuple, list[int]]:
    """[clicks, human clicks] by (link, hour, dimension, value), from a key per
    visit: (link, hour, (browser, os, device, is_bot)), (link, hour, referrer
    host, is_bot) and (link, hour, country, is_bot)."""
    totals: dict[tuple, list[int]] = {}
    counted = [
        ((link, hour, dimension, value), is_bot, n)
        for (link, hour, (browser, os_family, device, is_bot)), n in Counter(agent_keys).items()
        for dimension, value in (("browser", browser), ("os", os_family), ("device", device))
    ]
    for dimension, keys in (("referer_host", host_keys), ("country", country_keys)):
        counted += [
            ((link, hour, dimension, value), is_bot, n) for (link, hour, value, is_bot), n in Counter(keys).items()
        ]
    for key, is_bot, n in counted:
        total = totals.setdefault(key, [0, 0])
        total[0] += n
        total[1] += 0 if is_bot else n
    return totals


def _day_text(day: int) -> str:
    return (date(1970, 1, 1) + timedelta(days=day)).isoformat()

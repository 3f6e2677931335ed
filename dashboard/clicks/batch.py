"""Stream entries to a batch: decoded, checked, enriched, and laid out as the
rows the importer copies into PostgreSQL. No side effects: the only state is
a cache of rows already made for the raw values seen before.

A batch carries COPY text of its raw clicks (CLICK_COLUMNS), its orphan
visits (ORPHAN_COLUMNS) and its rollup input (rollups.breakdown_rows and
rollups.visitor_rows), the links its clicks were served by, and its user
agents, which `user_agents` holds once each, by id.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from operator import itemgetter

from .enrichment import Enricher
from .records import BadEntry, decode_entry
from .rollups import HOUR_MS, breakdown_rows, copy_text, visitor_rows

# Clicks this far from the importer's clock are refused: a wild timestamp
# would otherwise create a partition decades away.
MAX_CLICK_AGE = timedelta(days=400)
MAX_CLICK_SKEW = timedelta(days=1)

CLICK_COLUMNS = (
    "click_id",
    "occurred_at",
    "slug",
    "link_id",
    "ip",
    "country",
    "user_agent_id",
    "browser",
    "os",
    "device",
    "is_bot",
    "referer",
    "referer_host",
    "rule",
)
ORPHAN_COLUMNS = (
    "click_id",
    "occurred_at",
    "slug",
    "ip",
    "country",
    "user_agent",
    "is_bot",
    "referer",
    "kind",
    "domain",
)
IMPORT_COLUMN = "import_id"
NULL = "\\N"
CACHE_MAX = 100_000  # raw values per cache before it starts again

# A click counts once in each dimension's breakdown under a key packed into
# one int: the link's place in the batch, the hour from the batch's first
# possible one, a facet (one value of a dimension, or an agent's browser, os
# and device at once) and whether it was a bot. Counting ints runs at C
# speed; tuples of strings cost a few times more. A batch spans fewer hours
# than 2^HOUR_BITS (MAX_CLICK_AGE + MAX_CLICK_SKEW).
HOUR_BITS = 14
FACET_BITS = 32


@dataclass
class Batch:
    entries: list[tuple[bytes, dict]]  # as read from the stream
    ack_ids: list[bytes] = field(default_factory=list)
    dead: list[tuple[bytes, dict, str]] = field(default_factory=list)  # entry id, fields, reason
    link_ids: set[int] = field(default_factory=set)
    agents: dict[int, str] = field(default_factory=dict)  # user_agents rows: id -> user agent
    clicks: int = 0
    orphans: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    click_rows: bytes = b""
    orphan_rows: bytes = b""
    breakdown_rows: bytes = b""
    visitor_rows: bytes = b""
    # The import that brought these visits from another shortener
    # (importers/history.py): each row of click_rows and orphan_rows then
    # ends in it, an IMPORT_COLUMN after the others.
    import_id: int | None = None

    @property
    def size(self) -> int:
        return self.clicks + self.orphans

    @property
    def click_columns(self) -> tuple[str, ...]:
        return CLICK_COLUMNS if self.import_id is None else (*CLICK_COLUMNS, IMPORT_COLUMN)

    @property
    def orphan_columns(self) -> tuple[str, ...]:
        return ORPHAN_COLUMNS if self.import_id is None else (*ORPHAN_COLUMNS, IMPORT_COLUMN)


class BatchMaker:
    """Makes batches. The rows for an address, a user agent or a referrer
    are made once and kept (the values repeat heavily), so that a click costs
    a few dict lookups and the joining of its lines."""

    def __init__(self, enricher: Enricher):
        self.enricher = enricher
        self._ips: dict[str, tuple] = {}
        self._agents: dict[str, tuple] = {}
        self._referers: dict[str, tuple] = {}
        self._seconds: dict[int, str] = {}
        # Facets by id and ids by facet: ((dimension, value), ...) <-> int.
        self._facets: list[tuple[tuple[str, str], ...]] = []
        self._facet_ids: dict[tuple[tuple[str, str], ...], int] = {}
        self._rules: dict[str, int] = {}  # a rule's facet key

    def _facet_key(self, *pairs: tuple[str, str]) -> int:
        """The facet of these (dimension, value) pairs, shifted past a click's bot bit."""
        facet = self._facet_ids.get(pairs)
        if facet is None:
            facet = self._facet_ids[pairs] = len(self._facets)
            self._facets.append(pairs)
        return facet << 1

    def _rule_key(self, rule: str) -> int:
        self._rules[rule] = key = self._facet_key(("rule", rule))
        return key

    def _ip_row(self, raw: str) -> tuple[str, int, int]:
        """(COPY text of ip and country, the country's facet key, network hash)."""
        facts = self.enricher.ip(raw)
        row = (
            f"{NULL if facts.stored is None else facts.stored}\t{copy_text(facts.country)}",
            self._facet_key(("country", facts.country)),
            facts.network_hash,
        )
        self._ips[raw] = row
        return row

    def _agent_row(self, raw: str) -> tuple[str, int, int, str, int, str]:
        """(COPY text of user_agent_id, browser, os, device and is_bot, the
        facet key of its browser, os and device, 1 for a bot and 0 for a
        human, COPY text of an orphan's user_agent and is_bot, the agent's
        hash, the agent as stored)."""
        facts = self.enricher.agent(raw)
        bot = "t" if facts.is_bot else "f"
        classes = (facts.browser, facts.os, facts.device)
        text = "\t".join([str(facts.agent_hash), *(copy_text(value) for value in classes), bot])
        facet_key = self._facet_key(*zip(("browser", "os", "device"), classes, strict=True))
        row = (
            text,
            facet_key,
            int(facts.is_bot),
            f"{copy_text(facts.user_agent)}\t{bot}",
            facts.agent_hash,
            facts.user_agent,
        )
        self._agents[raw] = row
        return row

    def _referer_row(self, raw: str) -> tuple[str, int, str]:
        """(COPY text of referer and referer_host, the host's facet key, COPY text of the referer alone)."""
        facts = self.enricher.referer(raw)
        referer = copy_text(facts.referer)
        row = (f"{referer}\t{copy_text(facts.host)}", self._facet_key(("referer_host", facts.host)), referer)
        self._referers[raw] = row
        return row

    def _second(self, second: int) -> str:
        """COPY text of a timestamptz to the second (UTC)."""
        text = datetime.fromtimestamp(second, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        self._seconds[second] = text
        return text

    def make(self, entries: list[tuple[bytes, dict]], *, now: datetime | None = None) -> Batch:
        """The batch of these entries. An entry that breaks the contract, or
        has a click out of the time range, goes to `dead` whole."""
        now = now or datetime.now(timezone.utc)
        min_ms = int((now - MAX_CLICK_AGE).timestamp() * 1000)
        max_ms = int((now + MAX_CLICK_SKEW).timestamp() * 1000)
        if len(self._seconds) > CACHE_MAX:
            self._seconds.clear()
        # The rows cached hold facet keys: they start again together.
        if max(len(self._ips), len(self._agents), len(self._referers), len(self._facets)) > CACHE_MAX:
            for cache in (self._ips, self._agents, self._referers, self._facet_ids, self._facets, self._rules):
                cache.clear()
        batch = Batch(entries=entries)
        decoded, links, agents = [], set(), set()
        for entry_id, fields in entries:
            batch.ack_ids.append(entry_id)
            if not fields:
                continue  # deleted from the stream while pending: nothing to store
            try:
                rows = decode_entry(fields)
                if rows:
                    first = min(rows, key=itemgetter(1))[1]
                    last = max(rows, key=itemgetter(1))[1]
                    if first < min_ms or last > max_ms:
                        raise BadEntry("click time is out of range")
            except BadEntry as exc:
                batch.dead.append((entry_id, fields, str(exc)))
                continue
            if rows:
                decoded.append(rows)
                links.update(map(itemgetter(3), rows))
                agents.update(map(itemgetter(5), rows))
                batch.first_ms = first if batch.first_ms is None else min(batch.first_ms, first)
                batch.last_ms = last if batch.last_ms is None else max(batch.last_ms, last)
        links.discard("")
        batch.link_ids = {int(link) for link in links}
        agent_rows, agent_row = self._agents, self._agent_row
        for raw in agents:
            row = agent_rows.get(raw) or agent_row(raw)
            batch.agents[row[4]] = row[5]
        self._rows(batch, decoded, first_hour=min_ms // HOUR_MS)
        return batch

    def _rows(self, batch: Batch, decoded: list[list[tuple]], *, first_hour: int) -> None:
        click_lines, orphan_lines = [], []
        keys, slots = [], {}  # packed breakdown keys; the batch's links, by place
        visitors: dict[int, set[int]] = {}  # by link, hour and bot (a packed key without its facet)
        rules, rule_key = self._rules, self._rule_key
        ips, ip_row = self._ips, self._ip_row
        agents, agent_row = self._agents, self._agent_row
        referers, referer_row = self._referers, self._referer_row
        seconds, second = self._seconds, self._second
        millis = _MILLIS
        decoded.reverse()
        while decoded:  # each entry's rows are let go as soon as they are made
            for click_id, ts, slug, link, ip, ua, ref, rule in decoded.pop():  # the hot loop: a few µs a click
                ip_text, country_key, network_hash = ips.get(ip) or ip_row(ip)
                agent_text, agent_key, bot, orphan_agent_text, agent_hash, _ = agents.get(ua) or agent_row(ua)
                referer_text, host_key, bare_referer_text = referers.get(ref) or referer_row(ref)
                if "\\" in slug or "\t" in slug or "\r" in slug or "\x00" in slug:
                    slug = copy_text(slug.replace("\x00", ""))
                occurred_at = (seconds.get(ts // 1000) or second(ts // 1000)) + millis[ts % 1000]
                if not link:
                    kind, _, domain = rule.partition(" ")  # checked by records.decode_entry
                    orphan_lines.append(
                        f"{click_id}\t{occurred_at}\t{slug}\t{ip_text}\t{orphan_agent_text}\t{bare_referer_text}"
                        f"\t{kind}\t{domain}\n"
                    )
                    continue
                click_lines.append(
                    f"{click_id}\t{occurred_at}\t{slug}\t{link}\t{ip_text}\t{agent_text}\t{referer_text}"
                    f"\t{rule or NULL}\n"
                )
                hour = ts // HOUR_MS
                slot = slots.get(link)
                if slot is None:
                    slot = slots[link] = len(slots)
                at = ((slot << HOUR_BITS | hour - first_hour) << FACET_BITS + 1) | bot
                keys += (at | agent_key, at | host_key, at | country_key)
                if rule:
                    keys.append(at | (rules.get(rule) or rule_key(rule)))
                # A visitor is the anonymised network and the user agent
                # (docs/rollups.md): the halves are hashed with different
                # keys, so their XOR is as good as a hash of the pair.
                seen = visitors.get(at)
                if seen is None:
                    seen = visitors[at] = set()
                seen.add(network_hash ^ agent_hash)
        batch.clicks, batch.orphans = len(click_lines), len(orphan_lines)
        batch.click_rows = "".join(click_lines).encode("utf-8", "replace")
        batch.orphan_rows = "".join(orphan_lines).encode("utf-8", "replace")
        links = list(slots)
        batch.visitor_rows = visitor_rows((*_unpack(at, links, first_hour), hashes) for at, hashes in visitors.items())
        batch.breakdown_rows = breakdown_rows(self._breakdown(keys, links, first_hour))

    def _breakdown(self, keys: list[int], links: list[str], first_hour: int) -> dict[tuple, list[int]]:
        """[clicks, human clicks] by (link, hour, dimension, value), from the packed keys."""
        facets, facet_mask = self._facets, (1 << FACET_BITS) - 1
        totals = {}
        for key, n in Counter(keys).items():
            link, hour, _ = _unpack(key, links, first_hour)
            human = 0 if key & 1 else n
            for dimension, value in facets[key >> 1 & facet_mask]:
                total = totals.get((link, hour, dimension, value))
                if total is None:
                    totals[link, hour, dimension, value] = [n, human]
                else:
                    total[0] += n
                    total[1] += human
        return totals


def _unpack(key: int, links: list[str], first_hour: int) -> tuple[str, int, bool]:
    """The link, hour and bot bit of a packed key."""
    at = key >> FACET_BITS + 1
    return links[at >> HOUR_BITS], first_hour + (at & (1 << HOUR_BITS) - 1), bool(key & 1)


_MILLIS = [f".{millis:03d}+00" for millis in range(1000)]

"""Stream entries to a batch: decoded, checked, enriched, and laid out as the
rows the importer copies into PostgreSQL. No side effects: the only state is
a cache of rows already made for the raw values seen before.

A batch carries COPY text of its raw clicks (CLICK_COLUMNS), its orphan
visits (ORPHAN_COLUMNS) and its rollup input (rollups.breakdown_rows and a
visitor row per click), the links its clicks were served by, and its user
agents, which `user_agents` holds once each, by id.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from operator import itemgetter

from .enrichment import Enricher
from .records import BadEntry, decode_entry
from .rollups import HOUR_MS, breakdown_rows, copy_text

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

    def _ip_row(self, raw: str) -> tuple[str, str, int]:
        """(COPY text of ip and country, country, network hash)."""
        facts = self.enricher.ip(raw)
        row = (
            f"{NULL if facts.stored is None else facts.stored}\t{copy_text(facts.country)}",
            facts.country,
            facts.network_hash,
        )
        self._ips[raw] = row
        return row

    def _agent_row(self, raw: str) -> tuple[str, tuple, str, int, str]:
        """(COPY text of user_agent_id, browser, os, device and is_bot, the
        classes (browser, os, device, is_bot), COPY text of an orphan's
        user_agent and is_bot, the agent's hash, the agent as stored)."""
        facts = self.enricher.agent(raw)
        bot = "t" if facts.is_bot else "f"
        classes = (facts.browser, facts.os, facts.device, facts.is_bot)
        text = "\t".join([str(facts.agent_hash), *(copy_text(value) for value in classes[:3]), bot])
        row = (text, classes, f"{copy_text(facts.user_agent)}\t{bot}", facts.agent_hash, facts.user_agent)
        self._agents[raw] = row
        return row

    def _referer_row(self, raw: str) -> tuple[str, str, str]:
        """(COPY text of referer and referer_host, the host, COPY text of the referer alone)."""
        facts = self.enricher.referer(raw)
        referer = copy_text(facts.referer)
        row = (f"{referer}\t{copy_text(facts.host)}", facts.host, referer)
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
        for cache in (self._ips, self._agents, self._referers, self._seconds):
            if len(cache) > CACHE_MAX:
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
            batch.agents[row[3]] = row[4]
        self._rows(batch, decoded)
        return batch

    def _rows(self, batch: Batch, decoded: list[list[tuple]]) -> None:
        click_lines, orphan_lines, visitor_lines = [], [], []
        agent_keys, host_keys, country_keys, rule_keys = [], [], [], []
        ips, ip_row = self._ips, self._ip_row
        agents, agent_row = self._agents, self._agent_row
        referers, referer_row = self._referers, self._referer_row
        seconds, second = self._seconds, self._second
        millis = _MILLIS
        decoded.reverse()
        while decoded:  # each entry's rows are let go as soon as they are made
            for click_id, ts, slug, link, ip, ua, ref, rule in decoded.pop():  # the hot loop: a few µs a click
                ip_text, country, network_hash = ips.get(ip) or ip_row(ip)
                agent_text, classes, orphan_agent_text, agent_hash, _ = agents.get(ua) or agent_row(ua)
                referer_text, host, bare_referer_text = referers.get(ref) or referer_row(ref)
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
                is_bot = classes[3]
                agent_keys.append((link, hour, classes))
                host_keys.append((link, hour, host, is_bot))
                country_keys.append((link, hour, country, is_bot))
                if rule:
                    rule_keys.append((link, hour, rule, is_bot))
                # A visitor is the anonymised network and the user agent
                # (docs/rollups.md): the halves are hashed with different
                # keys, so their XOR is as good as a hash of the pair.
                visitor_lines.append(f"{link}\t{hour}\t{network_hash ^ agent_hash}\t{'t' if is_bot else 'f'}\n")
        batch.clicks, batch.orphans = len(click_lines), len(orphan_lines)
        batch.click_rows = "".join(click_lines).encode("utf-8", "replace")
        batch.orphan_rows = "".join(orphan_lines).encode("utf-8", "replace")
        batch.visitor_rows = "".join(visitor_lines).encode()
        batch.breakdown_rows = breakdown_rows(agent_keys, host_keys, country_keys, rule_keys)


_MILLIS = [f".{millis:03d}+00" for millis in range(1000)]

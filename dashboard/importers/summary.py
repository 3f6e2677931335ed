"""What an import did, or, for a dry run, would do: counts, and the links
it could not bring (listed up to LISTED of each kind, all of them counted),
in sentences for the command and the Import page."""

from dataclasses import asdict, dataclass, field

LISTED = 200


@dataclass
class Summary:
    """What an import did, or, for a dry run, would do."""

    dry_run: bool = False
    lists_visits: bool = True  # the source has visits to give (importers/sources/base.py)
    links_read: int = 0
    links_created: int = 0  # a dry run: that would be
    links_there: int = 0  # imported before: left as they were
    clashes: list[dict] = field(default_factory=list)  # {"slug", "domain", "url"}: the slug is another link's
    invalid: list[dict] = field(default_factory=list)  # {"slug", "errors"}
    not_served: list[dict] = field(default_factory=list)  # {"slug", "domain"}: a domain Slingshot does not serve
    notes: list[dict] = field(default_factory=list)  # {"slug", "note"}: what of a link could not be brought
    counts: dict[str, int] = field(default_factory=dict)  # how many of each list above, all of them
    visits_read: int = 0
    visits_stored: int = 0  # new; a dry run: that would be
    visits_left_out: int = 0  # of links not imported (clashes, invalid, not served), besides those read
    visits_too_old: int = 0  # before what CLICK_RETENTION_MONTHS keeps
    visits_future: int = 0  # more than a day ahead of this host's clock
    orphans_read: int = 0
    orphans_stored: int = 0
    orphans_too_old: int = 0
    orphans_future: int = 0
    carried_clicks: int = 0  # counted by the source without a visit list, added to links' totals

    def listed(self, kind: str, entry: dict) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        entries = getattr(self, kind)
        if len(entries) < LISTED:
            entries.append(entry)

    @property
    def visits_there(self) -> int:
        """Read and meant to be stored, but stored before."""
        kept = self.visits_read - self.visits_too_old - self.visits_future
        return kept - self.visits_stored

    def as_dict(self) -> dict:
        return {**asdict(self), "visits_there": self.visits_there}

    def lines(self) -> list[str]:
        """The summary in sentences, as the command prints it and the page shows it."""
        would = "would be " if self.dry_run else ""
        lines = [
            f"links: {self.links_read} read, {self.links_created} {would}created, "
            f"{self.links_there} imported before (left as they are), {self.counts.get('clashes', 0)} clashes, "
            f"{self.counts.get('invalid', 0)} invalid, {self.counts.get('not_served', 0)} on domains not served here"
        ]
        if self.lists_visits:
            lines += [
                f"visits: {self.visits_read} read, {self.visits_stored} {would}stored, {self.visits_there} stored "
                f"before, {self.visits_left_out} of links not imported, {self.visits_too_old} older than "
                f"CLICK_RETENTION_MONTHS keeps, {self.visits_future} in the future",
                f"orphan visits: {self.orphans_read} read, {self.orphans_stored} {would}stored, "
                f"{self.orphans_too_old + self.orphans_future} out of the time kept",
            ]
        if self.carried_clicks:
            lines.append(f"clicks counted by the source without their visits: {self.carried_clicks} {would}added")
        if not self.links_created and not self.visits_stored and not self.orphans_stored and not self.carried_clicks:
            lines.append("nothing new: everything was imported before" if self.links_read else "the source is empty")
        for entry in self.clashes:
            lines.append(f"clash: {entry['domain']}/{entry['slug']} is another link's; {entry['url']} not imported")
        for entry in self.invalid:
            errors = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in entry["errors"].items())
            lines.append(f"invalid: {entry['slug']}: {errors}")
        for entry in self.not_served:
            lines.append(f"not imported: {entry['domain']}/{entry['slug']}: add the domain {entry['domain']} first")
        lines.extend(f"note: {entry['slug']}: {entry['note']}" for entry in self.notes)
        for kind in ("clashes", "invalid", "not_served", "notes"):
            if self.counts.get(kind, 0) > len(getattr(self, kind)):
                lines.append(f"... and {self.counts[kind] - len(getattr(self, kind))} more {kind.replace('_', ' ')}")
        return lines

"""What the multinode scenario found, and the lines `make multinode` prints."""

from collections import Counter
from dataclasses import dataclass, field

from loadtest.scenarios.multinode.topology import PIN_SECONDS


@dataclass
class Result:
    served: dict[str, int] = field(default_factory=dict)  # per edge
    stored: int = 0
    duplicates: int = 0
    reports_on_replica: bool = False
    own_change_listed: bool = False  # at once, with the replica's replay paused
    replica_listed_after_pin: bool = False  # the replica's older title once the pin was over
    without_primary: float = 0.0
    change_seen_after: float = 0.0  # from the change
    change_seen_after_promotion: float = 0.0  # from the new primary taking writes
    failure_times: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # per edge and kind: s from the kill
    away: float = 0.0  # seconds the old primary was away
    restarted_at: float = 0.0  # when an edge was restarted, s from the kill: a fault of its own
    # The limited link: its visits per edge, what failed (s from the kill),
    # and the visits the new primary counted while the old one was away.
    limited_served: dict[str, int] = field(default_factory=dict)
    limited_failures: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    limited_counted_on_new_primary: int = 0
    # The link made while there was no primary: what each edge answered
    # before serving it, and how long after the promotion all of them did.
    new_link_answers: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    new_link_served_after_promotion: float = 0.0
    importer_pending_at_kill: int = 0  # entries the killed importers had read and not stored
    # The locked link, tried on each edge every 0.1 s from the kill of the
    # primary: how long after the promotion a visitor got through (the pass
    # made and taken on the new primary), and what the tries before ended at.
    passes_after_promotion: dict[str, float] = field(default_factory=dict)
    passes_refused: Counter = field(default_factory=Counter)
    wait_retries: int = 0  # the publisher's deliveries refused for too few replicas, then retried
    notes: list[str] = field(default_factory=list)

    @property
    def total_served(self) -> int:
        return sum(self.served.values())

    @property
    def reconciled(self) -> bool:
        return (
            self.total_served == self.stored
            and self.duplicates == 0
            and all(self.served.values())
            and self.reports_on_replica
            and self.own_change_listed
            and self.replica_listed_after_pin
        )

    @property
    def held_up(self) -> bool:
        """What issue 29 asks of a failover: no failed visit to the plain
        link on any edge, the change followed within 1.5 s of the promotion,
        the limited link counted by the new primary, an importer killed with
        a batch open, a WAIT refused and retried, and a visitor through the
        password link on every edge within 1.5 s of the promotion."""
        return (
            all(self.failed_in_failover(edge) == 0 for edge in self.failure_times)
            and self.change_seen_after_promotion < 1.5
            and self.limited_counted_on_new_primary > 0
            and self.importer_pending_at_kill > 0
            and self.wait_retries > 0
            and len(self.passes_after_promotion) == len(self.failure_times)
            and max(self.passes_after_promotion.values()) < 1.5
        )

    def failed_visits(self, edge: str) -> int:
        return sum(len(times) for times in self.failure_times[edge].values())

    def failed_in_failover(self, edge: str) -> int:
        """Failed visits from the kill of the primary until an edge was restarted."""
        return sum(1 for times in self.failure_times[edge].values() for at in times if at < self.restarted_at)

    @property
    def taken_for_unknown(self) -> int:
        """Visits to an existing link, or the link made in the failover, that an edge answered 404."""
        return sum(
            len(times.get("HTTP 404", []))
            for kinds in (self.failure_times, self.limited_failures, self.new_link_answers)
            for times in kinds.values()
        )

    def lines(self) -> list[str]:
        served = ", ".join(f"{edge} {count}" for edge, count in self.served.items())
        return [
            f"redirects served: {served}; clicks stored: {self.stored}; duplicates: {self.duplicates}",
            f"failed visits: {', '.join(f'{edge} {self.failed_visits(edge)}' for edge in self.failure_times)}; "
            "from the kill of the primary until an edge was restarted: "
            + ", ".join(f"{edge} {self.failed_in_failover(edge)}" for edge in self.failure_times),
            f"visits to the existing link answered 404: {self.taken_for_unknown}",
            f"link report read from the PostgreSQL replica: {'yes' if self.reports_on_replica else 'NO'}",
            "a change listed at once to who made it, the replica paused: "
            f"{'yes' if self.own_change_listed else 'NO'}; the list read the replica "
            f"{PIN_SECONDS:g} s later: {'yes' if self.replica_listed_after_pin else 'NO'}",
            f"seconds without a working Redis primary: {self.without_primary:.2f}",
            f"seconds until every edge served the link changed during the failover: {self.change_seen_after:.2f} "
            f"({self.change_seen_after_promotion:.2f} after the new primary took writes)",
            f"seconds the old primary was away, under traffic: {self.away:.1f}",
            "visit-limited link (asks the primary through the Sentinels): served "
            + ", ".join(f"{edge} {n}" for edge, n in self.limited_served.items())
            + "; failed "
            + ", ".join(f"{e} {sum(map(len, t.values()))}" for e, t in self.limited_failures.items())
            + f"; visits counted by the new primary: {self.limited_counted_on_new_primary}",
            "the link made with no primary, before every edge served it: "
            + "; ".join(
                f"{edge} " + (", ".join(f"{what} ×{len(at)}" for what, at in sorted(answers.items())) or "nothing else")
                for edge, answers in self.new_link_answers.items()
            )
            + f"; served by every edge {self.new_link_served_after_promotion:.2f} s after the promotion",
            "a visitor through the locked link (its pass kept on the new primary), s after the promotion: "
            + ", ".join(f"{edge} {at:.2f}" for edge, at in self.passes_after_promotion.items())
            + "; tries before: "
            + (", ".join(f"{what} ×{n}" for what, n in sorted(self.passes_refused.items())) or "none"),
            f"entries the killed importer host had read and not yet stored: {self.importer_pending_at_kill}",
            f"publisher deliveries refused by WAIT (too few replicas) and retried: {self.wait_retries}",
            *self.notes,
            f"reconciled: {self.stored}/{self.total_served}",
        ]


def failure_times(failures: list[tuple[float, str]], since: float) -> dict[str, list[float]]:
    """What failed visits saw, each with when, in seconds from `since`."""
    times: dict[str, list[float]] = {}
    for at, what in failures:
        times.setdefault(what, []).append(at - since)
    return times

"""How web/templates/web/team_audit.html shows an audit entry's changes."""

import json
from dataclasses import dataclass

from django import template

register = template.Library()

# A change shown on its entry's line: one field whose two values take at
# most this many characters; longer or more changes fold under <details>.
BRIEF_CHARS = 80


@dataclass(frozen=True)
class Change:
    field: str
    before: str | None  # None: the field was set, as a link is created, not changed
    after: str


@dataclass(frozen=True)
class Changes:
    listed: list[Change]

    @property
    def brief(self) -> bool:
        return len(self.listed) == 1 and len(self.listed[0].before or "") + len(self.listed[0].after) <= BRIEF_CHARS

    @property
    def fields(self) -> str:
        return ", ".join(change.field for change in self.listed)


def _shown(value) -> str:
    """A value as people read it: nothing as –, yes and no, a list of words
    as a list, anything else as JSON (a link's rules)."""
    if value is None or value == "" or value == []:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return ", ".join(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


@register.filter
def audit_changes(changes: dict) -> Changes:
    """The entry's changes ({field: [before, after]}) in the order recorded;
    of a field set from nothing (a new link's), its value alone, and none
    of a field left empty."""
    shown = []
    for field, (before, after) in changes.items():
        if before is None:
            if _shown(after) != "–":
                shown.append(Change(field, None, _shown(after)))
        else:
            shown.append(Change(field, _shown(before), _shown(after)))
    return Changes(shown)

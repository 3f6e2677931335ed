"""What a source's link becomes in this Slingshot (importers/runner.py
creates it): its domain here, its options cut to what a link may hold, a
link asking for a password imported disabled, and checked as link_create
checks it in a dry run; or the reason it cannot be imported, in the
summary."""

from collections.abc import Callable

from django.core.exceptions import ValidationError

from links.fields import LinkFields
from links.models import Domain, Link
from links.services import link_validate
from links.validation import TAG_PATTERN, default_host, domain_host

from .sources.base import SourceLink
from .summary import Summary

TITLE_MAX = Link._meta.get_field("title").max_length


def clean_tags(tags: list, notes: list[str]) -> list[str]:
    """The tags Slingshot can keep (links.validation.TAG_PATTERN, at most
    20, each once); a note for each left out."""
    kept = []
    for tag in tags:
        if not isinstance(tag, str) or not TAG_PATTERN.fullmatch(tag):
            notes.append(f"tag {tag!r} was left out: tags are 1 to 50 letters, digits, '.', '-' or '_'")
        elif tag not in kept and len(kept) < 20:
            kept.append(tag)
        elif tag not in kept:
            notes.append(f"tag {tag!r} was left out: a link has at most 20 tags")
    return kept


class LinkPreparer:
    """Prepares the links of one run, into `chosen` (the job's domain) or the
    domain of `domains` (by host) a link names; `source_default_host` is
    asked only when a link names a host, since a source may have to fetch it."""

    def __init__(
        self,
        *,
        chosen: Domain,
        domains: dict[str, Domain],
        source_default_host: Callable[[], str | None],
        summary: Summary,
        dry_run: bool,
    ):
        self.chosen, self.domains, self.source_default_host = chosen, domains, source_default_host
        self.summary, self.dry_run = summary, dry_run

    def _domain(self, item: SourceLink) -> Domain | None:
        if item.host is None:
            return self.chosen
        try:
            host = domain_host(item.host)
        except ValidationError:
            return None
        # The source's default host, and this Slingshot's default host at the
        # source (another team's export), are the source's default domain.
        return self.chosen if host in (default_host(), self.source_default_host()) else self.domains.get(host)

    def prepare(self, item: SourceLink) -> tuple[SourceLink, LinkFields] | None:
        """The link's LinkFields, checked as link_create checks them; None,
        with the reason in the summary, for one that cannot be imported."""
        if item.errors:
            self.summary.listed("invalid", {"slug": item.slug, "errors": item.errors})
            return None
        domain = self._domain(item)
        if domain is None and item.host_or_default:
            domain = self.chosen
            item.notes.append(f"the domain {item.host} is not served here: imported into {domain.host}")
        if domain is None:
            self.summary.listed("not_served", {"slug": item.slug, "domain": item.host})
            return None
        options = dict(item.options)
        if "tags" in options:
            options["tags"] = clean_tags(options["tags"], item.notes)
        if len(options.get("title") or "") > TITLE_MAX:
            options["title"] = options["title"][: TITLE_MAX - 1] + "…"
            item.notes.append(f"its title was cut to {TITLE_MAX} characters")
        if item.password and options.get("is_active", True):
            options["is_active"] = False
            item.notes.append(
                "it asks for a password, which cannot be read back from the source: imported disabled; "
                "set a password on its Edit page, then enable it"
            )
        fields = LinkFields(url=item.url, slug=item.slug, domain=domain, **options)
        try:
            # A run's link_bulk_create checks each link itself (and says which it refused).
            if self.dry_run:
                link_validate(fields)
        except ValidationError as exc:
            errors = exc.message_dict if hasattr(exc, "error_dict") else {"link": exc.messages}
            self.summary.listed("invalid", {"slug": item.slug, "errors": errors})
            return None
        for note in item.notes:
            self.summary.listed("notes", {"slug": item.slug, "note": note})
        return item, fields

"""What every source gives the runner (importers/runner.py): its links,
each with the options Slingshot keeps (links/fields.py), and, from those
that keep them, their visits and orphan visits (importers/history.py's
Visit and Orphan), always in the same order, so that a run taken over
part way skips what was stored before (`skip`)."""

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.utils.dateparse import parse_datetime

from slingshot import outbound
from slingshot.outbound import guarded

from ..history import Orphan, Visit

log = logging.getLogger(__name__)
T = TypeVar("T")


class SourceError(Exception):
    """The source cannot be read: a clear sentence for the person, nothing
    half done. The sentence names a setting as the Import page labels it;
    `setting` is its name among an import's options (ImportJob.options,
    the page's fields, the command's flags with dashes), with the `value`
    that would help, if there is one, for the command to name its flag."""

    def __init__(self, message: str, *, setting: str = "", value: str = ""):
        super().__init__(message)
        self.setting, self.value = setting, value


@dataclass
class SourceLink:
    """A link as a source has it, in Slingshot's terms."""

    external_id: str  # the link's id at the source, for ImportedLink
    url: str
    slug: str | None  # None: generated
    # The host of its domain at the source; None: the source's default
    # domain, whose links go into the domain the import was given.
    host: str | None = None
    # A host not served here is the source's default domain's (a CSV of
    # another Slingshot), rather than a reason to leave the link out.
    host_or_default: bool = False
    # Options of links/fields.py's OPTIONS besides url, slug, domain and password.
    options: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    # Visits the source has counted: where the edge's visit limit counter starts (max_visits).
    visits: int = 0
    # Visits the source counts but cannot list (Kutt, Bitly, which both
    # leave bots out): added to the link's all-time clicks and human clicks.
    carried_clicks: int = 0
    # The link asks for a password at the source, which cannot be read back.
    password: bool = False
    # What of it could not be brought, each in a sentence.
    notes: list[str] = field(default_factory=list)
    # Why it cannot be imported at all ({field: [messages]}), found reading the source.
    errors: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # An answer of another shape than the source's kind writes fails
        # here, while the source reads it (read), not later in the run.
        for name, kinds in _SOURCE_LINK_TYPES:
            if not isinstance(getattr(self, name), kinds):
                raise TypeError(f"a link's {name} is {type(getattr(self, name)).__name__}")


_SOURCE_LINK_TYPES = [
    ("external_id", str),
    ("url", str),
    ("slug", (str, type(None))),
    ("host", (str, type(None))),
    ("options", dict),
    ("created_at", (datetime, type(None))),
    ("visits", int),
    ("carried_clicks", int),
    ("notes", list),
    ("errors", dict),
]


class Source:
    """A source of links. `key` names it (kind and address) in ImportedLink
    and in visit ids; `lists_visits` says whether it has visits to give."""

    key: str = ""
    lists_visits: bool = False
    # Visits of links `wanted` said no to (not imported), as far as the source could count them.
    left_out: int = 0

    def default_host(self) -> str | None:
        """The host of the source's default domain, if it has one and says
        which: orphan visits on it are the chosen domain's."""
        return None

    def links(self) -> Iterator[SourceLink]:
        raise NotImplementedError

    def visits(self, *, wanted: Callable[[str], bool], skip: int = 0) -> Iterator[tuple[str, Visit]]:
        """(a link's external id, one of its visits), for every link
        `wanted` says yes to, after the first `skip` of them."""
        return iter(())

    def orphan_visits(self, *, skip: int = 0) -> Iterator[Orphan]:
        return iter(())

    def close(self) -> None:
        pass


# What reading an answer of a shape its kind never writes raises: a field
# missing (KeyError), a list or a string where a mapping was (TypeError,
# AttributeError), a number that is not one (ValueError).
MISSHAPEN = (AttributeError, IndexError, KeyError, TypeError, ValueError)


def read(source: Source, items: Iterable[T]) -> Iterator[T]:
    """What a source gives (its links(), visits() or orphan_visits()); a
    SourceError naming it when reading an item fails on what the source
    answered (MISSHAPEN), so that the import fails saying so rather than on
    an error of Slingshot's. The traceback is logged for whoever looks into it."""
    try:
        # Only the source's own reading raises here: what the run does with
        # an item happens between yields, outside this frame.
        yield from items
    except MISSHAPEN as exc:
        log.warning("reading %s failed", source.key, exc_info=True)
        raise SourceError(
            f"The source ({source.key}) answered something it does not write, which cannot be read "
            f"({exc.__class__.__name__}: {exc}): is it the kind of server chosen, and a version "
            "docs/importing.md names?"
        ) from None


# --- helpers the sources share ------------------------------------------------------------


def moment(value: str | None) -> datetime | None:
    """An ISO 8601 time as sources write it (an offset or Z; without one, UTC); None for none."""
    if not value:
        return None
    try:
        parsed = parse_datetime(value.strip())  # Bitly's +0000 too
    except ValueError:
        parsed = None
    if parsed is None:
        raise SourceError(f"{value!r} is not a date and time.")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def millis(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def base_url(url: str) -> str:
    """A server's address as given, checked (slingshot/outbound/urls.py's
    check_url), without a trailing slash."""
    url = (url or "").strip().rstrip("/")
    try:
        outbound.check_url(url)
    except outbound.UrlRefused as exc:
        raise SourceError(f"The server's address must be its http or https one. {exc}") from None
    return url


class Api:
    """JSON over HTTP through slingshot/outbound/: every request to the
    origin (scheme, host and port) of `base`, a page's next link too; with
    `public_only` (and IMPORTERS_PRIVATE_ADDRESSES off) only to public
    addresses, checked where the connection is made; no redirect followed;
    each answer within IMPORTERS_MAX_RESPONSE_MB and IMPORTERS_REQUEST_TIMEOUT,
    each read within `timeout`. A request the server throttled (429) or
    failed (5xx, a lost connection) is tried again with backoff before the
    import gives up (SourceError); one refused, cut or redirected is not."""

    def __init__(
        self, *, base: str, headers: dict[str, str], name: str, timeout: float = 30.0, public_only: bool = False
    ):
        self.base, self.name, self.timeout = base, name, timeout
        self.attempts = settings.IMPORTERS_API_ATTEMPTS
        self.origin = outbound.check_url(base)
        self.session = guarded.session(
            private_addresses=not public_only or settings.IMPORTERS_PRIVATE_ADDRESSES,
            headers={"Accept": "application/json", "User-Agent": "slingshot-import", **headers},
        )

    def get(self, path: str, params: dict | list | None = None) -> Any:
        url = path if path.startswith(("http://", "https://")) else self.base + path
        try:
            origin = outbound.check_url(url)
        except outbound.UrlRefused as exc:
            raise SourceError(f"{self.name} pointed the import at an address it does not follow. {exc}") from None
        if origin != self.origin:
            raise SourceError(
                f"{self.name} pointed the import at another server ({host_of(url)}), which it does not follow."
            )
        for attempt in range(self.attempts):
            try:
                answer = guarded.fetch(
                    self.session,
                    url,
                    params=params,
                    read_timeout=self.timeout,
                    deadline=settings.IMPORTERS_REQUEST_TIMEOUT,
                    max_bytes=settings.IMPORTERS_MAX_RESPONSE_MB * 1024 * 1024,
                )
            except outbound.AddressRefused as exc:
                raise SourceError(
                    f"{exc}: the Import page fetches from public addresses only; run manage.py import_links "
                    "on the server instead (docs/importing.md)."
                ) from None
            except outbound.TooLarge as exc:
                raise SourceError(
                    f"{self.name} at {self.base}: {exc} (IMPORTERS_MAX_RESPONSE_MB), to {path}."
                ) from None
            except outbound.TooSlow as exc:
                raise SourceError(
                    f"{self.name} at {self.base}: {exc} (IMPORTERS_REQUEST_TIMEOUT), to {path}."
                ) from None
            except requests.RequestException as exc:
                if attempt == self.attempts - 1 and guarded.not_found(exc):
                    raise SourceError(f"{self.name} at {self.base}: {host_of(url)} cannot be found.") from None
                if attempt == self.attempts - 1:
                    raise SourceError(
                        f"{self.name} at {self.base} does not answer: {exc.__class__.__name__}."
                    ) from None
                time.sleep(min(30, 0.5 * 2**attempt))
                continue
            status = answer.status
            if status == 429 or status >= 500:
                if attempt == self.attempts - 1:
                    raise SourceError(f"{self.name} answered {status} to {path} {self.attempts} times.")
                retry_after = answer.headers.get("Retry-After", "")
                time.sleep(min(60, float(retry_after) if retry_after.isdigit() else 0.5 * 2**attempt))
                continue
            if 300 <= status < 400:
                raise SourceError(
                    f"{self.name} answered {path} with a redirect ({status}) to "
                    f"{outbound.quoted(answer.headers.get('Location', ''))}, which the import does not follow: "
                    "give the address it points to instead."
                )
            if status in (401, 403):
                raise SourceError(f"{self.name} refused the key ({status}): check it and its rights.")
            if status != 200:
                raise SourceError(f"{self.name} answered {status} to {path}: {answer.text(200)}")
            try:
                return answer.json()
            except ValueError:
                raise SourceError(f"{self.name} answered {path} with something that is not JSON.") from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.session.close()

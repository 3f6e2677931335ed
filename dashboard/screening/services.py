"""Reading the lists of SCREEN_LISTS and SCREEN_ALLOWLIST into
screening.models.ScreenList, for every process to look up
(screening/screen.py): `manage.py screen_lists` does it every
SCREEN_REFRESH_MINUTES.

A list is a file or an http(s) URL, named `name=source` or after its
file. One that cannot be read keeps what it held, with the error, so an
unreachable mirror never empties a blocklist; lists no longer configured
go."""

import io
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from slingshot.outbound import guarded
from slingshot.outbound.errors import OutboundError

from . import screen
from .formats import lines_of, parse, sha256_of
from .models import ScreenList

log = logging.getLogger(__name__)

MAX_LIST_BYTES = 256 * 1024 * 1024
# The blocklist of the domains the staff banned (moderation/services.py).
BANS, BANS_SOURCE = "staff bans", "the staff's bans (dashboard)"
FETCH_SECONDS = 120.0


@dataclass(frozen=True)
class Source:
    name: str
    where: str
    allow: bool


def sources_of(setting: list[str], *, allow: bool) -> list[Source]:
    """`name=path-or-url` or `path-or-url` (named after its last part), comma-separated."""
    sources = []
    for item in setting:
        item = item.strip()
        if not item:
            continue
        name, _, where = item.partition("=")
        if not where or re.match(r"[a-z][a-z0-9+.-]*://", item, re.I) or "/" in name:
            name, where = "", item
        where = where.strip()
        name = name.strip() or Path(urlsplit(where).path).name or where
        sources.append(Source(name=name[:200], where=where, allow=allow))
    return sources


def configured() -> list[Source]:
    return sources_of(settings.SCREEN_LISTS, allow=False) + sources_of(settings.SCREEN_ALLOWLIST, allow=True)


def _open(where: str):
    """The list's bytes as a stream of lines."""
    if re.match(r"https?://", where, re.I):
        session = guarded.session(private_addresses=True)  # the operator's own lists, a mirror on their network too
        answer = guarded.fetch(session, where, read_timeout=30.0, deadline=FETCH_SECONDS, max_bytes=MAX_LIST_BYTES)
        if answer.status != 200:
            raise OutboundError(f"{where} answered {answer.status}")
        return io.BytesIO(bytes(answer.body))
    if Path(where).stat().st_size > MAX_LIST_BYTES:
        raise OutboundError(f"larger than {MAX_LIST_BYTES // 2**20} MB")
    return open(where, "rb")  # noqa: SIM115 (closed by the caller's with)


def refresh(source: Source) -> ScreenList:
    """Reads one list and stores it if its text changed."""
    row, _ = ScreenList.objects.get_or_create(allow=source.allow, name=source.name, defaults={"source": source.where})
    started = time.monotonic()
    try:
        with _open(source.where) as stream:
            text_digest = sha256_of(stream)
            now = timezone.now()
            if text_digest == row.digest and row.source == source.where:
                row.read_at, row.error = now, ""
                row.save(update_fields=["read_at", "error"])
                return row
            parsed = parse(lines_of(stream))
    except (OSError, OutboundError, ValueError) as exc:
        row.error = str(exc)[:1000] or type(exc).__name__
        row.source = source.where
        row.save(update_fields=["error", "source"])
        log.warning("screen list %s (%s) not read, kept as it was: %s", source.name, source.where, row.error)
        return row
    row.source = source.where
    row.domains = parsed.domains.packed()
    row.urls = parsed.urls.packed()
    domains, urls = len(row.domains) // 8, len(row.urls) // 8
    row.entries = domains + urls
    row.skipped = parsed.skipped
    row.digest = text_digest
    row.changed_at = row.read_at = now
    row.error = ""
    row.save()
    log.info(
        "screen list %s: %d domains, %d URLs (%d lines skipped) in %.1f s",
        source.name,
        domains,
        urls,
        parsed.skipped,
        time.monotonic() - started,
    )
    return row


def refresh_all() -> list[ScreenList]:
    sources = configured()
    rows = [refresh(source) for source in sources]
    with transaction.atomic():
        kept = [row.pk for row in rows]
        ScreenList.objects.exclude(pk__in=kept).exclude(allow=False, name=BANS).delete()
    screen.forget()
    return rows


def store_bans(domains: list[str]) -> ScreenList:
    """The staff's bans (moderation/) as the blocklist BANS, which no
    refresh removes: each domain with its subdomains."""
    parsed = parse(domains)
    row, _ = ScreenList.objects.get_or_create(allow=False, name=BANS, defaults={"source": BANS_SOURCE})
    row.domains, row.urls = parsed.domains.packed(), b""
    row.entries, row.skipped = len(row.domains) // 8, parsed.skipped
    row.digest, row.error = "", ""
    row.changed_at = row.read_at = timezone.now()
    row.save()
    screen.forget()
    return row

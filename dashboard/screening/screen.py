"""Whether a link's destination is listed: the lists of SCREEN_LISTS and
SCREEN_ALLOWLIST as the refresher stored them (screening.models.ScreenList),
held by each process and read again when they change.

Each list is kept as two sorted arrays of 64-bit hashes (BLAKE2b) of its
domains and of its URLs: 8 bytes an entry, so a million domains take 8 MB
in each process and load in milliseconds, and a lookup is a binary search
per list for the host and each domain above it. Two different names with
the same 64-bit hash are a chance of one in 2^64 / (entries) per lookup."""

import time
from array import array
from bisect import bisect_left
from dataclasses import dataclass

from .formats import canonical_url, digest

# A process asks PostgreSQL whether the lists changed at most this often.
RELOAD_SECONDS = 5.0


def _holds(hashes: array, value: int) -> bool:
    at = bisect_left(hashes, value)
    return at < len(hashes) and hashes[at] == value


@dataclass(frozen=True)
class Listing:
    """Why a destination is listed: the list's name, and what of it matched."""

    list_name: str
    matched: str


@dataclass
class Loaded:
    name: str
    allow: bool
    domains: array
    urls: array


def suffixes(host: str) -> list[str]:
    """The host and each domain above it (not the top-level one alone)."""
    if host.startswith("[") or host.replace(".", "").isdigit():
        return [host]  # an address has no parent
    labels = host.split(".")
    return [".".join(labels[i:]) for i in range(len(labels) - 1)] or [host]


class Screen:
    def __init__(self, lists: list[Loaded]):
        self.blocks = [item for item in lists if not item.allow]
        self.allows = [item for item in lists if item.allow]

    def __bool__(self) -> bool:
        return bool(self.blocks)

    def listing(self, host: str, url: str) -> Listing | None:
        """The first block list that has the host (or a domain above it) or
        the exact URL, unless an allowlist has either."""
        names = suffixes(host)
        hashed = [(name, digest(name)) for name in names]
        canonical = canonical_url(url)
        url_hash = digest(canonical) if canonical else None
        for allow in self.allows:
            if any(_holds(allow.domains, value) for _, value in hashed):
                return None
            if url_hash is not None and _holds(allow.urls, url_hash):
                return None
        for block in self.blocks:
            for name, value in hashed:
                if _holds(block.domains, value):
                    return Listing(block.name, name)
            if url_hash is not None and _holds(block.urls, url_hash):
                return Listing(block.name, canonical)
        return None


NONE = Screen([])
_cache: dict = {"checked": float("-inf"), "version": None, "screen": NONE}


def forget() -> None:
    _cache.update(checked=float("-inf"), version=None, screen=NONE)


def current() -> Screen:
    """The lists as stored now (SCREEN_LISTS', SCREEN_ALLOWLIST's and the
    staff's bans), read again when they have changed (asked at most every
    RELOAD_SECONDS)."""
    if time.monotonic() - _cache["checked"] < RELOAD_SECONDS:
        return _cache["screen"]
    from .models import ScreenList  # by call: links.validation imports this module

    version = ScreenList.objects.version()
    if version != _cache["version"]:
        lists = []
        for row in ScreenList.objects.filter(entries__gt=0).order_by("allow", "name"):
            domains, urls = array("Q"), array("Q")
            domains.frombytes(bytes(row.domains))
            urls.frombytes(bytes(row.urls))
            lists.append(Loaded(row.name, row.allow, domains, urls))
        _cache["screen"] = Screen(lists)
        _cache["version"] = version
    _cache["checked"] = time.monotonic()
    return _cache["screen"]


def listing_of(host: str, url: str) -> Listing | None:
    screen = current()
    return screen.listing(host, url) if screen else None

"""Blocklists as people publish them, read line by line into domains and
URLs (screening/screen.py keeps them). Each line is read by what it looks
like, so one file may mix formats:

- hosts files: `0.0.0.0 ads.example` or `127.0.0.1 a.example b.example`
  (the address first, then names; localhost and its kin skipped);
- plain domain lists: `phish.example`, also `*.phish.example` and
  `.phish.example`;
- AdGuard and Adblock Plus domain rules: `||phish.example^`, with or
  without `$options`; exceptions (`@@`) and rules with a path or a pattern
  are not domain rules and are skipped;
- URLhaus's CSV (`"id","dateadded","url",...`): its `url` column;
- plain URL lists: `http://bad.example/payload.exe`, matched exactly.

Comments (`#`, `!`, `;`, `[Adblock Plus 2.0]`) and blank lines are skipped,
and so is a line that is none of these: a list is never refused whole for a
line it cannot read; `Parsed.skipped` counts them.

What a list holds is kept as 64-bit hashes from the start (`digest`), so
that a list of a million domains is read in a few seconds and tens of
megabytes, never a million strings at once."""

import csv
import ipaddress
import re
import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from hashlib import blake2b, sha256
from urllib.parse import urlsplit, urlunsplit

# Loose on purpose: a name no link's host can be is never matched anyway,
# and a list of a million is read a line at a time.
DOMAIN = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)+")
HOSTS_ADDRESSES = frozenset({"0.0.0.0", "127.0.0.1", "::", "::1", "0", "255.255.255.255"})
NOT_NAMES = frozenset(
    {"localhost", "localhost.localdomain", "local", "broadcasthost", "ip6-localhost", "ip6-loopback", "0.0.0.0"}
)
# The commonest lines, read by one match each: a hosts file's with one name,
# and a plain domain list's.
HOSTS_LINE = re.compile(r"\s*(?:0\.0\.0\.0|127\.0\.0\.1)[ \t]+([A-Za-z0-9_.-]+)\s*(?:#.*)?")
DOMAIN_LINE = re.compile(r"\s*(?:\*\.|\.)?([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+)\.?\s*")
ABP_DOMAIN_RULE = re.compile(r"\|\|([^/^$*|]+)\^?(?:\$.*)?")
DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def digest(text: str) -> int:
    """The 64-bit hash lists keep a domain or a URL as."""
    return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "little")


class Hashes:
    """Hashes (`digest`) gathered 8 bytes each, in 65,536 buckets by their
    top 16 bits: no Python object per entry, and each bucket sorted on its
    own at the end, so that the whole comes out sorted."""

    def __init__(self) -> None:
        self._buckets: dict[int, bytearray] = {}

    def add(self, text: str) -> None:
        raw = blake2b(text.encode(), digest_size=8).digest()
        bucket = self._buckets.get(key := raw[7] << 8 | raw[6])
        if bucket is None:
            self._buckets[key] = bucket = bytearray()
        bucket += raw

    def packed(self) -> bytes:
        """Sorted and without repeats, as ScreenList keeps them (native 64-bit integers)."""
        out = array("Q")
        for key in sorted(self._buckets):
            values = array("Q")
            values.frombytes(_little_to_native(self._buckets[key]))
            out.extend(sorted(set(values)))
        return out.tobytes()

    def as_set(self) -> set[int]:
        values = array("Q")
        values.frombytes(self.packed())
        return set(values)


def _little_to_native(raw: bytearray) -> bytes:
    if sys.byteorder == "little":
        return bytes(raw)
    values = array("Q", bytes(raw))
    values.byteswap()
    return values.tobytes()


@dataclass
class Parsed:
    """The hashes of a list's domains and URLs, and how many lines were
    none of the formats."""

    domains: Hashes = field(default_factory=Hashes)
    urls: Hashes = field(default_factory=Hashes)
    skipped: int = 0

    def add_domain(self, name: str) -> None:
        self.domains.add(name)

    def add_url(self, url: str) -> None:
        self.urls.add(url)


def domain_of(text: str) -> str | None:
    """A host name as lists and links compare them: lower case, no trailing
    dot, IDN as punycode; None when it is not a domain name."""
    name = text.strip(" .\t").lower()
    if name[:2] == "*.":
        name = name[2:]
    if not name.isascii():
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    if len(name) > 253 or not DOMAIN.fullmatch(name) or name in NOT_NAMES:
        return None
    return name


def canonical_url(url: str) -> str | None:
    """A URL as lists and links compare them: scheme and host in lower case,
    the default port and the fragment gone, the rest as it is."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    netloc = parts.netloc.rsplit("@", 1)[-1].lower()
    if netloc.endswith(DEFAULT_PORTS[scheme]):
        netloc = netloc[: -len(DEFAULT_PORTS[scheme])]
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def _is_address(token: str) -> bool:
    if token in HOSTS_ADDRESSES:
        return True
    if not (token[0].isdigit() or ":" in token):
        return False
    if token in NOT_NAMES:
        return False
    try:
        ipaddress.ip_address(token)
    except ValueError:
        return False
    return True


def read_line(line: str, into: Parsed) -> None:
    if (found := HOSTS_LINE.fullmatch(line) or DOMAIN_LINE.fullmatch(line)) is not None:
        name = found.group(1).lower().strip(".")
        if "." in name and len(name) <= 253 and name not in NOT_NAMES:
            into.add_domain(name)
        return
    line = line.strip()
    if not line:
        return
    first = line[0]
    if first in "#!;[":
        return
    if first == "|":
        rule = ABP_DOMAIN_RULE.fullmatch(line)
        if rule and (name := domain_of(rule.group(1))):
            into.add_domain(name)
        else:
            into.skipped += 1  # a rule by pattern, or for an address
        return
    if first == "@" or "##" in line:
        into.skipped += 1  # an exception, or a rule for a page's content
        return
    if first == '"' or (first.isdigit() and "://" in line and line.count(",") >= 3):
        for column in next(csv.reader([line]), []):  # URLhaus: the column that is a URL
            if "://" in column and (url := canonical_url(column)):
                into.add_url(url)
                return
        into.skipped += 1
        return
    tokens = line.split("#", 1)[0].split()
    if not tokens:
        return
    if len(tokens) >= 2 and _is_address(tokens[0]):  # hosts file
        for token in tokens[1:]:
            if name := domain_of(token):
                into.add_domain(name)
        return
    if len(tokens) > 1:
        into.skipped += 1
        return
    token = tokens[0]
    if "://" in token:
        if url := canonical_url(token):
            into.add_url(url)
        else:
            into.skipped += 1
    elif _is_address(token):  # an address list: links to that address
        address = ipaddress.ip_address(token)
        into.add_domain(str(address) if address.version == 4 else f"[{address.compressed}]")
    elif name := domain_of(token):
        into.add_domain(name)
    else:
        into.skipped += 1


def sha256_of(stream) -> str:
    """The SHA-256 of a binary stream's bytes, read in chunks; the stream rewound."""
    digest = sha256()
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
    stream.seek(0)
    return digest.hexdigest()


def lines_of(stream) -> Iterator[str]:
    """A binary stream's lines, as text (what is not UTF-8 replaced)."""
    for raw in stream:
        yield raw.decode("utf-8", errors="replace")


def parse(lines: Iterable[str]) -> Parsed:
    """A list's lines (a file object, or a text's splitlines())."""
    parsed = Parsed()
    for line in lines:
        read_line(line, parsed)
    return parsed

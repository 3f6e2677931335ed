"""Bitly, through its API v4 (a token, `Authorization: Bearer`) or the CSV
its Links page exports.

A bitlink on Bitly's own domains (bit.ly, j.mp, bitly.is) is one of the
source's default domain and goes into the domain the import was given; one
with a custom back-half on a branded domain keeps that domain and
back-half. Bitly keeps no visit an API gives: a link's clicks (its summary,
over all time; the CSV's clicks column) are added to the link's all-time
clicks, as Kutt's are (importers/sources/kutt.py).

The CSV's columns are found by name, case aside, from those Bitly's export
and its API's `links_list` export use: the short link (`Link`, `Bitlink`,
`id`), a custom one (`Custom Link`, `custom_bitlinks`), the target
(`Destination URL`, `Long URL`, `long_url`), and optionally `Title`,
`Created`/`Date Created`/`created_at`, `Tags` (comma separated) and
`Clicks`/`Engagements`."""

import csv
import io
from collections.abc import Iterator
from urllib.parse import urlsplit

from ..files import Opener
from .base import Api, Source, SourceError, SourceLink, base_url, moment

API = "https://api-ssl.bitly.com/v4"
BITLY_HOSTS = {"bit.ly", "j.mp", "bitly.is", "bitly.com"}
PAGE = 100

_CSV_NAMES = {
    "link": ("link", "bitlink", "short link", "short url", "id"),
    "custom": ("custom link", "custom bitlink", "custom_bitlinks", "custom bitlinks"),
    "url": ("destination url", "long url", "long_url", "destination", "original url"),
    "title": ("title",),
    "created": ("created", "date created", "created_at", "created at"),
    "tags": ("tags",),
    "clicks": ("clicks", "engagements", "total clicks", "total engagements"),
}


def _where(bitlink: str) -> tuple[str | None, str]:
    """(host, or None for Bitly's own domains; back-half) of a bitlink given
    with or without its scheme."""
    bitlink = bitlink.strip()
    parts = urlsplit(bitlink if "://" in bitlink else f"https://{bitlink}")
    host = (parts.hostname or "").lower()
    return (None if host in BITLY_HOSTS else host), parts.path.strip("/")


def _link(*, bitlink: str, custom: str, url: str, title: str, created, tags: list[str], clicks: int) -> SourceLink:
    host, slug = _where(custom or bitlink)
    notes = []
    try:
        created = moment(created)
    except SourceError:
        notes.append(f"its creation time {created!r} could not be read: it is the time of the import")
        created = None
    return SourceLink(
        external_id=bitlink.split("://", 1)[-1].strip(),
        url=url,
        slug=slug,
        host=host,
        options={"title": title, "tags": tags},
        created_at=created,
        carried_clicks=clicks,
        notes=notes,
    )


class BitlyApiSource(Source):
    key = "bitly"

    def __init__(self, *, token: str, group: str = "", base: str = API, public_only: bool = False):
        if not token:
            raise SourceError("Bitly needs an access token (BITLY_TOKEN, or --token-file).")
        self.group = group
        self.api = Api(
            base=base_url(base), headers={"Authorization": f"Bearer {token}"}, name="Bitly", public_only=public_only
        )

    def links(self) -> Iterator[SourceLink]:
        group = self.group or self.api.get("/user").get("default_group_guid")
        if not group:
            raise SourceError(
                'Bitly names no default group for this token: give the GUID of the group to import ("Bitly group GUID").',
                setting="group",
            )
        page = self.api.get(f"/groups/{group}/bitlinks", {"size": PAGE, "archived": "both"})
        while True:
            for item in page.get("links") or []:
                bitlink = item["id"]
                summary = self.api.get(f"/bitlinks/{bitlink}/clicks/summary", {"unit": "month", "units": -1})
                yield _link(
                    bitlink=bitlink,
                    custom=(item.get("custom_bitlinks") or [""])[0],
                    url=item.get("long_url") or "",
                    title=item.get("title") or "",
                    created=item.get("created_at"),
                    tags=list(item.get("tags") or []),
                    clicks=int(summary.get("total_clicks") or 0),
                )
            following = (page.get("pagination") or {}).get("next")
            if not following:
                return
            page = self.api.get(following)

    def close(self) -> None:
        self.api.close()


class BitlyCsvSource(Source):
    key = "bitly"

    def __init__(self, *, csv_file: Opener):
        self.open = csv_file

    def links(self) -> Iterator[SourceLink]:
        with self.open() as raw:
            reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=""))
            header = {name.strip().lower(): name for name in reader.fieldnames or []}
            columns = {
                key: next((header[name] for name in names if name in header), None) for key, names in _CSV_NAMES.items()
            }
            if not columns["link"] or not columns["url"]:
                raise SourceError(
                    "The Bitly CSV needs a column of short links (Link, Bitlink) and one of targets "
                    "(Destination URL, Long URL)."
                )

            def cell(row: dict, key: str) -> str:
                return (row.get(columns[key]) or "").strip() if columns[key] else ""

            for row in reader:
                clicks = cell(row, "clicks").replace(",", "")
                yield _link(
                    bitlink=cell(row, "link"),
                    custom=cell(row, "custom").split(",")[0].strip(),
                    url=cell(row, "url"),
                    title=cell(row, "title"),
                    created=cell(row, "created") or None,
                    tags=[tag.strip() for tag in cell(row, "tags").split(",") if tag.strip()],
                    clicks=int(clicks) if clicks.isdigit() else 0,
                )

"""A Kutt server (3.x), through its API v2 (`/api/v2/links`, the key in
X-API-KEY): the key's person's links with their descriptions, expiry and
whether they ask for a password, and their visit totals.

Kutt keeps no visit, only counts per hour (leaving bots out), and its API
gives a link's total: that total is added to the link's all-time clicks
(carried over), and a later run adds what Kutt counted since. A password
cannot be read back: such a link is imported disabled, and said so. A link
Kutt's administrators banned is imported disabled too."""

from collections.abc import Iterator

from .base import Api, Source, SourceError, SourceLink, base_url, moment

PAGE = 50  # the most Kutt gives at once


class KuttSource(Source):
    def __init__(self, *, url: str, api_key: str, public_only: bool = False):
        self.url = base_url(url)
        if not api_key:
            raise SourceError("Kutt needs an API key (KUTT_API_KEY, or --api-key-file).")
        self.key = f"kutt {self.url}"
        self.api = Api(base=self.url + "/api/v2", headers={"X-API-KEY": api_key}, name="Kutt", public_only=public_only)

    def links(self) -> Iterator[SourceLink]:
        skip = 0
        while True:
            answer = self.api.get("/links", {"limit": PAGE, "skip": skip})
            try:
                data, total = answer["data"], int(answer["total"])
            except (KeyError, TypeError, ValueError):
                raise SourceError(f"Kutt answered /api/v2/links without data and total: is {self.url} Kutt?") from None
            for item in data:
                yield self._link(item)
            skip += len(data)
            if not data or skip >= total:
                return

    @staticmethod
    def _link(item: dict) -> SourceLink:
        notes = []
        options = {"description": item.get("description") or "", "expires_at": moment(item.get("expire_in"))}
        if item.get("banned"):
            options["is_active"] = False
            notes.append("Kutt's administrators banned it: imported disabled")
        return SourceLink(
            external_id=str(item["id"]),
            url=item.get("target") or "",
            slug=item.get("address") or "",
            host=(item.get("domain") or "").lower() or None,
            options=options,
            created_at=moment(item.get("created_at")),
            carried_clicks=int(item.get("visit_count") or 0),
            password=bool(item.get("password")),
            notes=notes,
        )

    def close(self) -> None:
        self.api.close()

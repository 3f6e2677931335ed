import uuid
from datetime import datetime, timezone

from django.core.management import call_command

from testing.streams import add_entry

FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:120.0) Gecko/20100101 Firefox/120.0"


def fresh(prefix: str = "w") -> str:
    return prefix + uuid.uuid4().hex[:8]


def import_clicks(link, count: int = 1, *, ua: str = FIREFOX, when: datetime | None = None, rule: str = "") -> None:
    """Clicks on a link through the real importer, as the edge would have
    recorded them (served by `rule`, or by the link's url)."""
    ts = int((when or datetime.now(timezone.utc)).timestamp() * 1000)
    add_entry(
        [
            {
                "ts": ts,
                "slug": link.slug,
                "link": link.pk,
                "ip": "198.51.100.7",
                "ua": ua,
                "ref": "https://news.example.org/post",
                "rule": rule,
            }
            for _ in range(count)
        ]
    )
    call_command("import_clicks", "--once", "--consumer", "web-test")

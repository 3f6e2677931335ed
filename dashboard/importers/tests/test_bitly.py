"""Bitly: its API v4 (a local server answering with the shapes of Bitly's
API reference, dev.bitly.com) and the CSV of its links."""

from datetime import datetime, timezone

import pytest

from links.models import Link
from testing.factories import fresh

from .helpers import import_links, total_clicks
from .servers import ApiServer

pytestmark = pytest.mark.django_db

TOKEN = "bitly-test-token"
GROUP = "Ba1bc23dE4F"


def bitlinks(url: str, brand: str) -> list[dict]:
    """Two pages of a group's bitlinks, as GET /v4/groups/{guid}/bitlinks gives them."""
    first = [
        {
            "created_at": "2024-06-12T18:06:22+0000",
            "id": "bit.ly/2WTVrNv",
            "link": "https://bit.ly/2WTVrNv",
            "custom_bitlinks": ["https://bit.ly/spring-sale"],
            "long_url": "https://example.com/spring?utm_source=bitly",
            "title": "Spring sale",
            "archived": False,
            "created_by": "someone",
            "client_id": "a5e8cebb233c5d07e5c553e917dffb92fec5264d",
            "tags": ["newsletter", "sale"],
            "deeplinks": [],
            "references": {"group": f"https://api-ssl.bitly.com/v4/groups/{GROUP}"},
        },
        {
            "created_at": "2024-07-01T08:00:00+0000",
            "id": f"{brand}/launch",
            "link": f"https://{brand}/launch",
            "custom_bitlinks": [],
            "long_url": "https://example.com/launch",
            "title": "",
            "archived": True,
            "tags": [],
            "deeplinks": [],
            "references": {},
        },
    ]
    second = [
        {
            "created_at": "2024-08-09T10:11:12+0000",
            "id": "bit.ly/3xYz123",
            "link": "https://bit.ly/3xYz123",
            "custom_bitlinks": [],
            "long_url": "https://example.com/third",
            "title": "Third",
            "archived": False,
            "tags": ["with space"],
            "deeplinks": [],
            "references": {},
        }
    ]
    return [first, second]


CLICKS = {"bit.ly/2WTVrNv": 17, "bit.ly/3xYz123": 0}


def api(brand: str):
    pages = bitlinks("", brand)

    def route(path: str, query: dict):
        if path == "/v4/user":
            return 200, {"login": "someone", "name": "Some One", "is_active": True, "default_group_guid": GROUP}
        if path == f"/v4/groups/{GROUP}/bitlinks":
            page = int(query.get("page", ["1"])[0])
            following = f"{server.url}/v4/groups/{GROUP}/bitlinks?page={page + 1}&size=100" if page == 1 else ""
            listing = {
                "links": pages[page - 1],
                "pagination": {"prev": "", "next": following, "size": 100, "page": page, "total": 3},
            }
            return 200, listing
        if path.startswith("/v4/bitlinks/") and path.endswith("/clicks/summary"):
            bitlink = path[len("/v4/bitlinks/") : -len("/clicks/summary")]
            return 200, {
                "unit_reference": "2024-09-01T00:00:00+0000",
                "total_clicks": CLICKS.get(bitlink, 5),
                "units": -1,
                "unit": "month",
            }
        return None

    server = ApiServer(route, header="Authorization", secret=f"Bearer {TOKEN}")
    return server


def run(*args, **options) -> str:
    return import_links("bitly", *args, **options)


def test_bitlinks_through_the_api_with_their_click_totals(user, team, other_domain, tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN)
    with api(other_domain.host) as server:
        out = run(url=server.url + "/v4", token_file=str(token), user=user.username, team=str(team.pk))

    assert "links: 3 read, 3 created" in out and "\n  visits:" not in out, out
    spring = Link.objects.get(team=team, slug="spring-sale")  # its custom back-half
    assert (spring.url, spring.title, spring.tags) == (
        "https://example.com/spring?utm_source=bitly",
        "Spring sale",
        ["newsletter", "sale"],
    )
    assert spring.created_at == datetime(2024, 6, 12, 18, 6, 22, tzinfo=timezone.utc)
    assert total_clicks(spring) == 17
    # A branded domain served here keeps its domain and back-half.
    launch = Link.objects.get(domain=other_domain, slug="launch")
    assert total_clicks(launch) == 5
    # A tag Slingshot cannot keep is left out, said so: the link is kept.
    third = Link.objects.get(team=team, slug="3xYz123")
    assert third.tags == [] and "tag 'with space' was left out" in out
    assert "clicks counted by the source without their visits: 22 added" in out


def test_a_second_run_adds_only_the_clicks_counted_since(user, team, other_domain, tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN)
    with api(other_domain.host) as server:
        run(url=server.url + "/v4", token_file=str(token), user=user.username, team=str(team.pk))
        again = run(url=server.url + "/v4", token_file=str(token), user=user.username, team=str(team.pk))
        CLICKS["bit.ly/2WTVrNv"] = 20
        try:
            later = run(url=server.url + "/v4", token_file=str(token), user=user.username, team=str(team.pk))
        finally:
            CLICKS["bit.ly/2WTVrNv"] = 17
    assert "0 created, 3 imported before" in again and "nothing new" in again
    assert "0 created, 3 imported before" in later and "3 added" in later
    assert total_clicks(Link.objects.get(team=team, slug="spring-sale")) == 20


def test_the_csv_bitly_exports(user, team, tmp_path):
    slug = fresh("csv-")
    path = tmp_path / "bitly.csv"
    path.write_text(
        "Title,Bitlink,Custom Link,Destination URL,Date Created,Tags,Engagements\r\n"
        f'"Guide, part 1",https://bit.ly/4abcDEF,https://bit.ly/{slug},https://example.com/guide,'
        '2024-05-01T09:00:00+0000,"docs,guide","1,234"\r\n'
        ",bit.ly/4zzzzzz,,https://example.com/other,2024-05-02T09:00:00+0000,,0\r\n",
        newline="",
    )
    out = run(str(path), user=user.username, team=str(team.pk))

    assert "links: 2 read, 2 created" in out, out
    guide = Link.objects.get(team=team, slug=slug)
    assert (guide.title, guide.tags, guide.url) == ("Guide, part 1", ["docs", "guide"], "https://example.com/guide")
    assert total_clicks(guide) == 1234
    assert Link.objects.filter(team=team, slug="4zzzzzz").exists()

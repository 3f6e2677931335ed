"""Social previews (edge/slingshot/previews.lua) through the services, the
publisher and a real nginx: the apps' link-preview crawlers, by their real
User-Agent strings, get the link's card; people, in a browser or an app's
own, get the redirect; a crawler's request is no visit."""

import html
import re
import uuid

import pytest
from crawlerdetect import CrawlerDetect
from edge_helpers import wait_for_clicks, wait_until
from test_clicks import served_orphans, served_redirects

from testing.factories import make_link

# The publisher writes the link to Redis once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

# As each sends it (their operators' documentation, and servers' logs).
CRAWLERS = {
    "facebook": "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    "x": "Twitterbot/1.0",
    "linkedin": "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
    "slack": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "discord": "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
    "whatsapp": "WhatsApp/2.23.20.0 A",
    "telegram": "TelegramBot (like TwitterBot)",
    "imessage": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) "
    "Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0",
    "applebot": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
    "pinterest": "Pinterest/0.2 (+https://www.pinterest.com/bot.html)",
    "reddit": "Mozilla/5.0 (compatible; redditbot/1.0; +http://www.reddit.com/feedback)",
    "teams": "Mozilla/5.0 (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5",
    "mastodon": "http.rb/5.1.1 (Mastodon/4.2.1; +https://mastodon.social/)",
    "bluesky": "Mozilla/5.0 (compatible; Bluesky Cardyb/1.1; +mailto:support@bsky.app)",
    "embedly": "Mozilla/5.0 (compatible; Embedly/0.2; +http://support.embed.ly/)",
    "vk": "Mozilla/5.0 (compatible; vkShare; +http://vk.com/dev/Share)",
}
PEOPLE = {
    "chrome": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 "
    "Safari/537.36",
    "facebook app": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Mobile/15E148 [FBAN/FBIOS;FBAV/440.0.0.32.112]",
    "instagram app": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Mobile/15E148 Instagram 300.0.0.18.110",
    "linkedin app": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Mobile/15E148 [LinkedInApp]/9.29.6000",
}
# Unfurlers the maintained crawler list (crawlerdetect) does not have yet;
# the test says so when it does.
NOT_IN_THE_LIST = {"bluesky"}
TITLE = 'Spring <sale> & "more"'


def meta(body: str, name: str) -> str | None:
    found = re.search(rf'<meta (?:property|name)="{re.escape(name)}" content="([^"]*)">', body)
    return html.unescape(found[1]) if found else None


@pytest.fixture
def previewed(owner):
    return make_link(
        owner=owner,
        slug="pv" + uuid.uuid4().hex[:10],
        url="https://shop.example/spring?utm_source=card",
        preview_title=TITLE,
        preview_description="Every coat, until March's end. <script>alert(1)</script>",
        preview_image_url="https://cdn.example/spring.jpg",
    )


@pytest.mark.parametrize("app", sorted(CRAWLERS))
def test_each_apps_crawler_gets_the_card_every_text_escaped_and_none_is_a_visit(app, edge, rds, previewed):
    ua = CRAWLERS[app]
    # The crawlers shown a card are crawlers by the maintained list the importer marks bots with.
    assert CrawlerDetect().is_crawler(ua) == (app not in NOT_IN_THE_LIST), ua
    redirects_before, orphans_before = served_redirects(rds), served_orphans(rds)
    response = edge.request(f"/{previewed.slug}", headers={"User-Agent": ua})
    assert response.status == 200, response
    assert response.headers["Content-Type"].startswith("text/html")
    body = response.body.decode()
    assert meta(body, "og:title") == TITLE
    assert meta(body, "twitter:title") == TITLE
    assert meta(body, "og:description") == "Every coat, until March's end. <script>alert(1)</script>"
    assert meta(body, "og:image") == meta(body, "twitter:image") == "https://cdn.example/spring.jpg"
    assert meta(body, "twitter:card") == "summary_large_image"
    # The card's address is the short URL, never the destination.
    assert re.fullmatch(rf"http://[^/]+/{previewed.slug}", meta(body, "og:url"))
    assert "<script>" not in body and "<sale>" not in body
    assert 'href="https://shop.example/spring?utm_source=card"' in body
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    assert edge.request(f"/{previewed.slug}", method="HEAD", headers={"User-Agent": ua}).status == 200
    # Not a visit: nothing in the stream, nothing counted as served.
    assert wait_for_clicks(rds, previewed.slug, 1, timeout=1.0) == []
    assert (served_redirects(rds), served_orphans(rds)) == (redirects_before, orphans_before)


def test_people_get_the_redirect_each_a_click(edge, rds, previewed):
    for ua in PEOPLE.values():
        assert not CrawlerDetect().is_crawler(ua), ua
        response = edge.request(f"/{previewed.slug}", headers={"User-Agent": ua})
        assert response.status == 302, (ua, response)
        assert response.headers["Location"] == "https://shop.example/spring?utm_source=card"
    for ua in CRAWLERS.values():
        assert edge.request(f"/{previewed.slug}", headers={"User-Agent": ua}).status == 200
    clicks = wait_for_clicks(rds, previewed.slug, len(PEOPLE))
    assert sorted(click["ua"] for click in clicks) == sorted(PEOPLE.values())
    assert all(click["link"] == str(previewed.pk) for click in clicks)


def test_a_link_without_a_preview_sends_crawlers_on_as_a_click(edge, rds, owner):
    plain = make_link(owner=owner, slug="pn" + uuid.uuid4().hex[:10], url="https://shop.example/")
    response = edge.request(f"/{plain.slug}", headers={"User-Agent": CRAWLERS["slack"]})
    assert (response.status, response.headers["Location"]) == (302, "https://shop.example/")
    assert len(wait_for_clicks(rds, plain.slug, 1)) == 1


def test_a_password_links_card_does_not_give_its_destination_away_nor_spend_its_visits(edge, rds, owner):
    link = make_link(
        owner=owner,
        slug="pp" + uuid.uuid4().hex[:10],
        url="https://secret.example/plans",
        password="open sesame",
        max_visits=1,
        preview_title="Our plans",
    )
    for _ in range(3):
        response = edge.request(f"/{link.slug}", headers={"User-Agent": CRAWLERS["linkedin"]})
        assert response.status == 200
        body = response.body.decode()
        assert meta(body, "og:title") == "Our plans"
        assert "secret.example" not in body
    # The limit's one visit is still there for a person (who meets the password page first).
    response = edge.request(f"/{link.slug}", headers={"User-Agent": PEOPLE["chrome"]})
    assert response.status == 200 and b"password" in response.body.lower()


def test_a_disabled_link_shows_no_card(edge, rds, owner):
    link = make_link(
        owner=owner, slug="pd" + uuid.uuid4().hex[:10], is_active=False, preview_title="Gone", url="https://e.com/"
    )
    before = served_orphans(rds)
    assert edge.request(f"/{link.slug}", headers={"User-Agent": CRAWLERS["x"]}).status == 404
    wait_until(lambda: served_orphans(rds) - before >= 1, what="the disabled link's visit counted")


def test_an_uploaded_image_is_the_cards_and_the_edge_serves_it_from_the_dashboard(make_dashboard, make_edge, owner):
    """The image uploaded to the dashboard is served by the edge on the
    link's domain, where the crawler's card names it; the same path on an
    edge with no dashboard, or of an image nobody uploaded, is a 404."""
    import io

    import requests
    from PIL import Image

    from links.preview_images import preview_image_set

    out = io.BytesIO()
    Image.new("RGB", (1200, 630), (10, 120, 200)).save(out, format="PNG")
    port = make_dashboard({})
    edge = make_edge(env={"EDGE_DASHBOARD_URL": f"http://127.0.0.1:{port}"})
    link = make_link(owner=owner, slug="pu" + uuid.uuid4().hex[:10], url="https://shop.example/", preview_title="Up")
    link = preview_image_set(link=link, actor=owner, data=out.getvalue())
    card = edge.request(f"/{link.slug}", headers={"User-Agent": CRAWLERS["facebook"]})
    assert card.status == 200
    image_url = meta(card.body.decode(), "og:image")
    assert re.fullmatch(rf"http://[^/]+/_preview/{link.preview_image}", image_url)
    fetched = requests.get(f"{edge.url}/_preview/{link.preview_image}", timeout=10)
    assert fetched.status_code == 200 and fetched.headers["Content-Type"] == "image/png"
    assert fetched.content[:8] == b"\x89PNG\r\n\x1a\n" and Image.open(io.BytesIO(fetched.content)).size == (1200, 630)
    assert "immutable" in fetched.headers["Cache-Control"]
    assert requests.get(f"{edge.url}/_preview/{'0' * 64}.png", timeout=10).status_code == 404
    assert requests.get(f"{edge.url}/_preview/../internal/report", timeout=10).status_code == 404
    assert requests.post(f"{edge.url}/_preview/{link.preview_image}", timeout=10).status_code == 403
    assert requests.get(f"{make_edge().url}/_preview/{link.preview_image}", timeout=10).status_code == 404

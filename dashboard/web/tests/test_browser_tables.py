"""Every table of the dashboard in a real browser (test_browser.py's
Chromium), at 1280 and 390 px, holding the long values real teams give it:
a long slug, host, target, title and tags, redirect rules, a page of audit
entries. On every page nothing scrolls sideways, no table is wider than the
box it sits in (no column cut off, to be scrolled to or not), every row's
links and buttons are on the screen, and the audit log stays a couple of
screens long on a phone. Screenshots in .test-artifacts/screenshots/."""

import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from playwright.sync_api import expect

from clicks.orphans import orphan_visits
from importers.jobs import job_create
from links.domains import domain_create
from links.services import link_update
from teams.models import AuditEntry
from testing.factories import fresh, make_link
from tokens.services import token_create

from .conftest import FIREFOX, import_clicks
from .test_browser import browser  # noqa: F401 (the Chromium fixture)
from .test_browser_forms import PHONE, shoot
from .test_browser_teams import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

WIDE = {"width": 1280, "height": 900}

# What breaks a table: the page, each table in its box, and every link, button
# or summary in a table's rows that is not folded away in a closed <details>
# (a token's confirmation) shown, within the viewport.
MISFITS = """() => {
    const width = document.documentElement.clientWidth, found = [];
    if (document.documentElement.scrollWidth > width) found.push(`the page: ${document.documentElement.scrollWidth} px`);
    for (const table of document.querySelectorAll("main table")) {
        if (!table.checkVisibility()) continue;  // a chart's figures, folded in a <details>
        const box = table.parentElement, right = table.getBoundingClientRect().right;
        if (table.scrollWidth > box.clientWidth + 1 || right > width + 0.5)
            found.push(`#${table.id}: ${table.scrollWidth} px in ${box.clientWidth}, to ${Math.round(right)}`);
        for (const action of table.querySelectorAll("tbody a, tbody button, tbody summary")) {
            const folded = action.closest("details:not([open])");
            if (folded && action !== folded.querySelector("summary")) continue;
            const where = action.getBoundingClientRect();
            if (!action.checkVisibility() || where.width === 0 || where.left < 0 || where.right > width + 0.5)
                found.push(`#${table.id} ${action.textContent.trim()}: ${Math.round(where.left)} to ${Math.round(where.right)}`);
        }
    }
    return found;
}"""

ON_SCREEN = """(element) => {
    const where = element.getBoundingClientRect();
    return element.checkVisibility() && where.width > 0 && where.left >= 0
        && where.right <= document.documentElement.clientWidth;
}"""


@pytest.fixture
def lived_in(edge, make_user):
    """A superuser's team as it looks after a while of real use."""
    person = make_user(is_staff=True, is_superuser=True)
    team = person.personal_team
    far = domain_create(
        host="go.spring-campaigns.marketing-department-example.com",
        root_url="https://www.marketing-department-example.com/landing/spring-campaign-overview?utm_source=root",
    )
    long_url = (
        "https://shop.example.com/products/outdoor-equipment/tents/four-season-expedition-tent-ultralight"
        "?utm_source=newsletter&utm_medium=email&utm_campaign=winter-sale-2026"
    )
    title = "Winter sale: four-season expedition tents, from the newsletter of December to every partner site"
    tags = ["winter-sale-2026", "newsletter", "email-campaigns", "partners"]
    links = [
        make_link(owner=person, url=long_url, slug=fresh("campaign-spring-newsletter-"), title=title, tags=tags),
        make_link(owner=person, url=long_url, slug=fresh("far-"), domain=far, password="open sesame", tags=tags[:1]),
        make_link(
            owner=person,
            url="https://www.example.com/default-target-for-everyone-else/with/a/rather/long/path",
            slug=fresh("ruled-"),
            title="Rules",
            rules=[
                {"conditions": [{"type": "device", "value": "ios"}], "url": "https://apps.apple.com/app/id1234567890"},
                {
                    "conditions": [{"type": "country", "value": "DE"}, {"type": "language", "value": "de"}],
                    "url": "https://www.example.de/angebote/winterschlussverkauf/zelte-und-schlafsaecke?utm_source=sl",
                },
            ],
        ),
    ]
    links += [make_link(owner=person, url=f"{long_url}&n={n}", title=title, tags=tags) for n in range(6)]
    for n, link in enumerate(links[3:] * 5):
        link_update(link=link, actor=person, title=f"{title} ({n})")
    link_update(link=links[3], actor=person, is_active=False)
    import_clicks(links[0], 3)
    import_clicks(links[2], 2)
    token_create(user=person, name="the deploy script of the marketing site, for spring", scope="write")
    job_create(owner=person, team=team, source="shlink", options={"url": "https://shlink.example.com"})
    assert edge.request(f"/{fresh('no-such-campaign-path-')}", headers={"User-Agent": FIREFOX}).status == 404
    deadline = time.monotonic() + 10
    while not orphan_visits(start=timezone.now() - timedelta(hours=1), end=timezone.now()).visits:
        assert time.monotonic() < deadline, "the orphan visit never reached PostgreSQL"
        time.sleep(0.05)
        call_command("import_clicks", "--once", "--consumer", "tables-test")
    return person, links


PAGES = [
    ("overview", "/", "#top-links"),
    ("links", "/links/", "#links"),
    ("link-rules", "/links/{ruled}/", "#rule-clicks"),
    ("domains", "/domains/", "#domains"),
    ("tokens", "/tokens/", "#tokens"),
    ("teams", "/teams/", "#teams"),
    ("team", "/teams/{team}/", "#members"),
    ("audit", "/teams/{team}/audit/", "#audit"),
    ("people", "/users/", "#users"),
    ("imports", "/import/", "#source-imports"),
    ("orphan-visits", "/orphan-visits/", "#orphan-paths"),
    ("accounting", "/accounting/", "#accounting"),
    ("account", "/account/", "#account-tokens"),
]


def test_every_table_fits_with_its_rows_actions_in_sight(browser, live_server, lived_in):  # noqa: F811
    person, links = lived_in
    context, tab = sign_in(browser, live_server, person)
    for viewport, suffix, tallest_entry in ((WIDE, "", 80), (PHONE, "-phone", 130)):
        tab.set_viewport_size(viewport)
        for name, path, table in PAGES:
            tab.goto(path.format(ruled=links[2].slug, team=person.personal_team.pk))
            expect(tab.locator(f"{table} tbody tr").first).to_be_visible()
            shoot(tab, f"tables-{name}{suffix}")
            assert tab.evaluate(MISFITS) == [], (name, viewport)

        # Each link's row has its three actions, on the screen.
        tab.goto("/links/")
        rows = tab.locator("#links tbody tr")
        expect(rows).to_have_count(len(links))
        for link in links:
            row = rows.filter(has_text=link.slug)
            for action in ("QR", "Edit", "Enable" if link == links[3] else "Disable"):
                assert row.get_by_text(action, exact=True).evaluate(ON_SCREEN), (link.slug, action, viewport)

        # The audit log: a page of entries, each a line or two, its changes folded.
        tab.goto(f"/teams/{person.personal_team.pk}/audit/")
        entries = tab.locator("#audit tbody tr")
        assert entries.count() == min(50, AuditEntry.objects.filter(team=person.personal_team).count()) >= 40
        heights = entries.evaluate_all("(rows) => rows.map((row) => row.getBoundingClientRect().height)")
        assert max(heights) <= tallest_entry, (viewport, heights)
        created = entries.filter(has_text=links[0].slug).filter(has_text="created a link")
        expect(created.locator("summary")).to_contain_text("url, slug")
        created.locator("summary").click()
        expect(created.locator("details li").first).to_contain_text("url: https://shop.example.com/")
        assert tab.evaluate(MISFITS) == [], viewport
    context.close()

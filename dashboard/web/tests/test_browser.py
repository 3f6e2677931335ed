"""The dashboard in a real browser (Playwright driving Debian's headless
Chromium) against the real stack: the live Django server, the edge and the
importer. Screenshots go to .test-artifacts/screenshots/."""

import re
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect, sync_playwright

from clicks.reports import link_totals
from links.models import Link
from testing.factories import PASSWORD, fresh, make_link

from .conftest import FIREFOX

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[3] / ".test-artifacts" / "screenshots"


@pytest.fixture(scope="module")
def browser():
    # Playwright's sync API keeps an event loop running in this thread while
    # it is open; the ORM calls of the tests are still plain synchronous code.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, live_server, user):
    context = browser.new_context(
        base_url=live_server.url, accept_downloads=True, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(15_000)
    tab = context.new_page()
    errors = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto("/")
    expect(tab).to_have_url(re.compile(r"/sign-in/"))
    tab.get_by_label("Username").fill(user.username)
    tab.get_by_label("Password").fill(PASSWORD)
    tab.get_by_role("button", name="Sign in").click()
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    yield tab
    context.close()
    assert errors == [], errors  # no JavaScript errors on any page


def import_until_counted(link: Link, clicks: int, timeout: float = 10.0) -> None:
    """Runs the importer until the edge's clicks have been flushed to the stream and stored."""
    deadline = time.monotonic() + timeout
    while link_totals(link_ids=[link.pk])[link.pk].clicks < clicks:
        assert time.monotonic() < deadline, "the click never reached the rollups"
        time.sleep(0.05)
        call_command("import_clicks", "--once", "--consumer", "browser-test")


def test_create_follow_import_and_read_the_report(page, edge, settings, tmp_path):
    settings.EDGE_BASE_URL = edge.url
    slug = fresh("br")
    page.get_by_role("link", name="Links", exact=True).click()
    page.get_by_role("button", name="New link").click()
    page.get_by_label("Target URL").fill("https://example.com/browser-test")
    page.get_by_label("Slug").fill(slug)
    page.get_by_label("Title", exact=True).fill("Browser test")
    page.get_by_label("Tags").fill("e2e, browser")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Browser test")).to_be_visible()
    expect(page.locator(".copy a").first).to_have_text(f"{edge.url}/{slug}")

    response = edge.request(f"/{slug}", headers={"User-Agent": FIREFOX, "Referer": "https://news.example.org/"})
    assert response.status == 302 and response.headers["Location"] == "https://example.com/browser-test"
    import_until_counted(Link.objects.get(slug=slug), 1)

    page.reload()
    expect(page.locator("#total-clicks")).to_have_text("1")
    expect(page.locator("#recent-clicks tbody tr")).to_have_count(1)
    expect(page.locator(".breakdowns")).to_contain_text("news.example.org")
    drawn = page.evaluate("""() => {
        const chart = Chart.getChart(document.querySelector("canvas[data-chart]"));
        return chart && {type: chart.config.type, clicks: chart.data.datasets[0].data, width: chart.width};
    }""")
    assert drawn["type"] == "bar" and drawn["clicks"][-1] == 1 and sum(drawn["clicks"]) == 1 and drawn["width"] > 100
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "link-detail.png", full_page=True)

    for kind, magic in [("png", b"\x89PNG"), ("svg", b"<svg")]:
        with page.expect_download() as download:
            page.locator(f"#qr-{kind}").click()
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
        assert saved.name == f"{slug}.{kind}" and magic in saved.read_bytes()[:200]

    page.get_by_role("link", name="Links", exact=True).click()
    row = page.locator("#links tbody tr", has_text=slug)
    expect(row).to_contain_text("Browser test")
    expect(row.locator("td.num")).to_have_text("1")
    page.screenshot(path=SCREENSHOTS / "links-list.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})  # a phone
    page.screenshot(path=SCREENSHOTS / "links-list-phone.png", full_page=True)


def test_create_and_revoke_a_token(page):
    page.locator(".nav-wide").get_by_text("API", exact=True).click()
    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Name").fill("deploy script")
    page.get_by_label("Scope").select_option("write")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator("#token-value")).to_have_text(re.compile(r"^ssk_"))
    row = page.locator("#tokens tbody tr", has_text="deploy script")
    expect(row).to_contain_text("read-write")
    expect(row).to_contain_text("active")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "tokens.png", full_page=True)
    page.reload()  # post/redirect/get: a reload creates no second token, and the secret is gone
    expect(page.locator("#tokens tbody tr", has_text="deploy script")).to_have_count(1)
    expect(page.locator("#token-value")).to_have_count(0)
    row.get_by_role("button", name="Revoke deploy script…").click()  # asks first
    row.get_by_role("button", name="Yes, revoke deploy script").click()
    expect(page.locator("#tokens tbody tr", has_text="deploy script")).to_contain_text("revoked")


def test_import_a_csv_with_one_bad_row(page, user):
    good = [fresh("im") for _ in range(2)]
    csv_text = (
        f"url,slug,title\nhttps://example.com/a,{good[0]},A\nftp://example.com/b,bad-row,B\n"
        f"https://example.com/c,{good[1]},C\n"
    )
    page.get_by_role("link", name="Links", exact=True).click()
    page.get_by_role("button", name="Import CSV").click()
    page.get_by_label("CSV file").set_input_files(
        files=[{"name": "links.csv", "mimeType": "text/csv", "buffer": csv_text.encode()}]
    )
    page.get_by_role("button", name="Check the file").click()
    errors = page.locator("#import-errors tbody tr")
    expect(errors).to_have_count(1)
    expect(errors).to_contain_text("bad-row")
    expect(errors).to_contain_text("Only http and https URLs can be shortened.")
    expect(page.locator("#import-preview tbody tr")).to_have_count(2)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "import-preview.png", full_page=True)
    page.get_by_role("button", name="Import the valid rows").click()
    expect(page.locator("#import-status")).to_have_text("Done: 2 links created.")
    expect(page.locator("#import-progress")).to_have_attribute("value", "3")
    assert set(Link.objects.filter(owner=user).values_list("slug", flat=True)) == set(good)


CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"


def test_the_list_filters_by_a_tag_case_aside_and_each_row_disables_its_link(page, user):

    tagged = make_link(owner=user, url="https://example.com/tagged", slug=fresh("tg"), tags=["Spring-Sale"])
    other = make_link(owner=user, url="https://example.com/other", slug=fresh("tg"), tags=["winter"])
    page.goto("/links/?tag=SPRING-SALE")
    rows = page.locator("#links tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(tagged.slug)

    page.goto("/links/")
    page.get_by_role("button", name=f"Disable {tagged.slug}").click()
    expect(page.get_by_text(f"{tagged.slug} is now disabled.")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/links/$"))
    tagged.refresh_from_db()
    other.refresh_from_db()
    assert (tagged.is_active, other.is_active) == (False, True)  # the one row's button, not another's
    page.get_by_role("button", name=f"Enable {tagged.slug}").click()
    expect(page.get_by_text(f"{tagged.slug} is now active.")).to_be_visible()
    tagged.refresh_from_db()
    assert tagged.is_active


def make_clicked_link(edge, user, *, firefox: int, chrome: int) -> Link:

    link = make_link(owner=user, url="https://example.com/report", slug=fresh("rp"), title="Report test")
    for agent, count in ((FIREFOX, firefox), (CHROME, chrome)):
        for _ in range(count):
            assert edge.request(f"/{link.slug}", headers={"User-Agent": agent}).status == 302
    import_until_counted(link, firefox + chrome)
    return link


def test_presets_custom_range_and_a_breakdown_filter(page, edge, user):
    link = make_clicked_link(edge, user, firefox=2, chrome=3)
    page.goto(f"/links/{link.slug}/")
    expect(page.locator("#total-clicks")).to_have_text("5")
    page.get_by_role("link", name="Last 7 days").click()
    expect(page.get_by_role("link", name="Last 7 days")).to_have_attribute("aria-current", "page")
    expect(page.locator("#total-clicks")).to_have_text("5")
    # A custom range of days long past: nothing in it, and the chart says so.
    page.get_by_label("From").fill("2020-01-01")
    page.get_by_label("To (included)").fill("2020-01-31")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#total-clicks")).to_have_text("0")
    expect(page.locator("#chart-empty")).to_be_visible()
    page.get_by_role("link", name="Last 30 days").click()
    # A breakdown row filters the whole report; its chip takes the filter away.
    page.locator("#breakdown-browser a", has_text="Chrome").click()
    expect(page.locator("#active-filters")).to_contain_text("Browser: Chrome")
    expect(page.locator("#total-clicks")).to_have_text("3")
    expect(page.locator("#recent-clicks tbody tr")).to_have_count(3)
    expect(page.locator("#breakdown-browser tbody tr")).to_have_count(1)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "link-report-filtered.png", full_page=True)
    page.locator("#active-filters a.chip").click()
    expect(page.locator("#total-clicks")).to_have_text("5")


def test_a_click_on_the_edge_reaches_the_open_page_its_header_and_its_report_alike(page, edge, user):
    link = make_clicked_link(edge, user, firefox=1, chrome=0)
    page.goto(f"/links/{link.slug}/")
    expect(page.locator("#total-clicks")).to_have_text("1")
    expect(page.locator("#all-time")).to_have_text("1 click of all time, 1 without bots")
    page.evaluate("() => { window.notReloaded = true; }")
    assert edge.request(f"/{link.slug}", headers={"User-Agent": FIREFOX}).status == 302
    assert edge.request(f"/{link.slug}", headers={"User-Agent": "curl/8.5.0"}).status == 302  # a bot
    import_until_counted(link, 3)
    expect(page.locator("#all-time")).to_have_text("3 clicks of all time, 2 without bots", timeout=10_000)
    # The header and the report below it, read at the same instant: the same clicks.
    shown = page.evaluate(
        """() => Object.fromEntries(["all-time-clicks", "all-time-human", "total-clicks", "total-bots"]
            .map((id) => [id, Number(document.getElementById(id).textContent)]))"""
    )
    assert shown["all-time-human"] == shown["total-clicks"] == 2, shown  # bots left out, as the report's default
    assert shown["all-time-clicks"] == shown["total-clicks"] + shown["total-bots"] == 3, shown
    expect(page.locator("#recent-clicks tbody tr")).to_have_count(2)
    assert page.evaluate("() => window.notReloaded === true")  # updated in place
    # The overview too.
    page.goto("/")
    expect(page.locator("#clicks-today")).to_have_text("2")
    page.evaluate("() => { window.notReloaded = true; }")
    assert edge.request(f"/{link.slug}", headers={"User-Agent": FIREFOX}).status == 302
    import_until_counted(link, 4)
    expect(page.locator("#clicks-today")).to_have_text("3", timeout=10_000)
    assert page.evaluate("() => window.notReloaded === true")


def test_csv_export_rows_are_the_clicks_made(page, edge, user, tmp_path):
    link = make_clicked_link(edge, user, firefox=2, chrome=1)
    page.goto(f"/links/{link.slug}/")
    with page.expect_download() as download:
        page.locator("#export-csv").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    import csv

    with saved.open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert saved.name == f"{link.slug}-clicks.csv"
    assert sorted(row["user_agent"] for row in rows) == sorted([FIREFOX, FIREFOX, CHROME])
    assert {row["slug"] for row in rows} == {link.slug}


PAGES = [
    ("overview", "/"),
    ("links-list", "/links/"),
    ("link-detail", "/links/{slug}/"),
    ("link-edit", "/links/{slug}/edit/"),
    ("link-delete", "/links/{slug}/delete/"),
    ("link-visits-delete", "/links/{slug}/visits/delete/"),
    ("link-create", "/links/new/"),
    ("link-import", "/links/import/"),
    ("tokens", "/tokens/"),
    ("time-zone", "/time-zone/"),
    ("password", "/password/"),
    ("orphan-visits", "/orphan-visits/"),
    ("accounting", "/accounting/"),
    ("campaigns", "/campaigns/"),
    ("utm-templates", "/utm-templates/"),
    ("not-found", "/links/no-such-link-at-all/"),
    ("domains", "/domains/"),
    ("teams", "/teams/"),
    ("team", "/teams/{team}/"),
    ("team-audit", "/teams/{team}/audit/"),
    ("team-webhooks", "/teams/{team}/webhooks/"),
    ("account", "/account/"),
    ("people", "/users/"),
]


def test_every_page_reads_on_a_phone_without_sideways_scrolling(page, edge, user):
    user.is_staff = user.is_superuser = True  # the operations pages and the people page too
    user.save(update_fields=["is_staff", "is_superuser"])
    link = make_clicked_link(edge, user, firefox=2, chrome=2)
    assert edge.request("/no-such-slug-here", headers={"User-Agent": FIREFOX}).status == 404
    link.tags = ["spring", "campaign-with-a-rather-long-name"]
    link.save(update_fields=["tags"])
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width, height, suffix in ((1280, 900, ""), (390, 844, "-phone")):
        page.set_viewport_size({"width": width, "height": height})
        for name, path in PAGES:
            page.goto(path.format(slug=link.slug, team=user.personal_team.pk))
            page.screenshot(path=SCREENSHOTS / f"page-{name}{suffix}.png", full_page=True)
            # Every aria-describedby names ids that exist; every visible field has a label.
            broken = page.evaluate("""() => {
                const out = [];
                for (const el of document.querySelectorAll("[aria-describedby]"))
                    for (const id of el.getAttribute("aria-describedby").split(/\\s+/))
                        if (!document.getElementById(id)) out.push(id);
                for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea"))
                    if (!(el.labels && el.labels.length) && !el.getAttribute("aria-label")) out.push(el.name);
                return out;
            }""")
            assert broken == [], (name, broken)
            if width == 390:
                sizes = page.evaluate(
                    "() => ({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth})"
                )
                assert sizes["scroll"] <= sizes["client"], (name, sizes)
    # On a phone the navigation is one menu, and recent clicks a list of cards.
    page.goto(f"/links/{link.slug}/")
    expect(page.locator(".nav-wide")).to_be_hidden()
    page.locator(".nav-menu summary").click()
    expect(page.locator(".nav-menu").get_by_role("link", name="API docs")).to_be_visible()
    expect(page.locator("#recent-clicks thead")).to_be_hidden()

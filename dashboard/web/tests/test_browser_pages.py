"""The pages around the links in a real browser, at 1280 and 390 px: the
navigation on one line, the links list (its columns, its Status filter, an
empty one without filters), and a new team that says where one is and how to
go back. Screenshots in .test-artifacts/screenshots/."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from teams.services import team_create
from testing.factories import fresh, make_link

from .conftest import import_clicks
from .test_browser import SCREENSHOTS, browser  # noqa: F401 (the Chromium fixture)
from .test_browser_forms import PHONE, shoot
from .test_browser_teams import no_sideways_scrolling, sign_in

pytestmark = pytest.mark.django_db(transaction=True)

WIDE = {"width": 1280, "height": 900}


def top_rows(tab, selector: str) -> set[int]:
    """The distinct tops, in px, of the visible children of each `selector` (one per line they fill)."""
    return set(
        tab.evaluate(
            """(selector) => [...document.querySelectorAll(selector)].flatMap((list) => [...list.children])
                .map((item) => item.getBoundingClientRect()).filter((box) => box.height > 0)
                .map((box) => Math.round(box.top + box.height / 2))""",
            selector,
        )
    )


def test_the_navigation_of_staff_keeps_to_one_line_and_the_phones_menu_sits_beside_the_team(
    browser,  # noqa: F811
    live_server,
    make_user,
):
    admin = make_user(is_staff=True, is_superuser=True)
    team_create(actor=admin, name="A team whose name is long enough to wrap on a phone")
    context, tab = sign_in(browser, live_server, admin, WIDE)
    # The brand, the team switcher and every item of the wide navigation: centred on one line.
    rows = top_rows(tab, ".site-nav > ul:not(.nav-phone)")
    assert max(rows) - min(rows) <= 4, rows
    tab.locator(".nav-wide summary", has_text="Operations").click()
    for name in ("Orphan visits", "Accounting", "People", "Admin"):
        expect(tab.locator(".nav-wide").get_by_role("link", name=name)).to_be_visible()
    shoot(tab, "nav-staff")

    tab.set_viewport_size(PHONE)
    tab.locator("#current-team").click()
    tab.get_by_role("button", name=re.compile("A team whose name")).click()
    expect(tab.locator("#current-team")).to_contain_text("A team whose name")
    # The Menu beside the team switcher, each on one line: the chevron stays beside the name.
    rows = top_rows(tab, ".site-nav > ul")
    assert max(rows) - min(rows) <= 4, rows
    team, menu = (tab.locator(selector).bounding_box() for selector in ("#current-team", ".nav-menu > summary"))
    assert team["height"] < 60 and menu["height"] < 60, (team, menu)
    assert team["x"] + team["width"] <= menu["x"], (team, menu)
    no_sideways_scrolling(tab)
    tab.locator(".nav-menu > summary").click()
    expect(tab.locator(".nav-menu").get_by_role("link", name="Accounting")).to_be_visible()
    shoot(tab, "nav-staff-phone")
    context.close()


def breaks_inside_words(tab, selector: str) -> list[str]:
    """Where the text of each `selector` wraps after a letter or digit: the
    two characters around each such line break."""
    return tab.evaluate(
        """(selector) => {
            const found = [];
            for (const cell of document.querySelectorAll(selector)) {
                const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
                let before = null;
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                    for (let at = 0; at < node.length; at++) {
                        const range = document.createRange();
                        range.setStart(node, at);
                        range.setEnd(node, at + 1);
                        const box = range.getClientRects()[0];
                        if (!box) continue;
                        const here = {top: box.top, char: node.data[at]};
                        if (before && here.top > before.top + 2 && /[A-Za-z0-9]/.test(before.char)
                            && /[A-Za-z0-9]/.test(here.char)) found.push(before.char + here.char);
                        before = here;
                    }
                }
            }
            return found;
        }""",
        selector,
    )


def test_the_links_list_shows_domain_password_and_state_and_filters_expired_links(
    browser,  # noqa: F811
    live_server,
    make_user,
):
    owner = make_user()
    now = timezone.now()
    long_url = "https://example.com/" + "/".join(["averyveryverylongpathsegment"] * 4) + "?utm_source=newsletter"
    live = make_link(owner=owner, url=long_url, slug=fresh("lv"), title="Live one", tags=["spring"])
    over = make_link(owner=owner, url="https://example.com/over", slug=fresh("ov"), expires_at=now - timedelta(days=1))
    later = make_link(
        owner=owner, url="https://example.com/later", slug=fresh("sc"), valid_since=now + timedelta(days=1)
    )
    locked = make_link(owner=owner, url="https://example.com/locked", slug=fresh("pw"), password="open sesame")
    context, tab = sign_in(browser, live_server, owner, WIDE)
    tab.goto("/links/")
    rows = tab.locator("#links tbody tr")
    expect(rows).to_have_count(4)
    expect(tab.locator("#links thead")).to_contain_text("Domain")
    expect(rows.filter(has_text=live.slug).locator("td.domain")).to_have_text(live.domain.host)
    expect(rows.filter(has_text=locked.slug).locator(".mark")).to_have_text("password")
    expect(rows.filter(has_text=live.slug).locator(".mark")).to_have_count(0)
    assert breaks_inside_words(tab, "#links td.target") == []
    fits = "() => document.querySelector('#links').scrollWidth <= document.querySelector('#links').parentElement.clientWidth"
    assert tab.evaluate(fits)  # every column within 1280 px, none scrolled out of sight
    shoot(tab, "links-list-columns")

    def listed(status: str) -> list[str]:
        tab.get_by_label("Status").select_option(status)
        tab.get_by_role("button", name="Apply").click()
        expect(tab).to_have_url(re.compile(f"status={status}"))
        return sorted(tab.locator("#links tbody tr td.short-link a").all_inner_texts())

    assert listed("expired") == [over.slug]
    assert listed("active") == sorted([live.slug, locked.slug])
    assert listed("scheduled") == [later.slug]
    expect(tab.locator("#links-where")).to_contain_text("1 link matches")

    tab.set_viewport_size(PHONE)
    tab.goto("/links/")
    # The links come first: the filters folded, the actions on a selection folded until one is ticked.
    expect(tab.locator("#filters")).not_to_have_attribute("open", "")
    expect(tab.locator("#bulk")).not_to_have_attribute("open", "")
    first = rows.first.bounding_box()
    assert first["y"] < PHONE["height"], first
    # A card without a title or tags shows no empty rows for them.
    card = rows.filter(has_text=over.slug)
    for label in ("Title", "Tags"):
        expect(card.locator(f'td[data-label="{label}"]')).to_be_hidden()
    expect(rows.filter(has_text=live.slug).locator('td[data-label="Title"]')).to_be_visible()
    assert breaks_inside_words(tab, "#links td.target") == []
    no_sideways_scrolling(tab)
    rows.filter(has_text=over.slug).locator("td.select input").check()
    expect(tab.locator("#bulk")).to_have_attribute("open", "")
    shoot(tab, "links-list-columns-phone")
    context.close()


def test_a_new_team_says_where_one_is_and_the_way_back_to_ones_links(browser, live_server, make_user):  # noqa: F811
    owner = make_user()
    mine = make_link(owner=owner, url="https://example.com/mine", slug=fresh("mn"))
    for viewport, suffix in ((WIDE, ""), (PHONE, "-phone")):
        context, tab = sign_in(browser, live_server, owner, viewport)
        name = fresh("Team ")
        tab.goto("/teams/")
        tab.get_by_label("Name").fill(name)
        tab.get_by_role("button", name=re.compile("Create")).click()
        expect(tab.locator(".messages, [role=status], .notice").first).to_contain_text(
            f"Created the team {name}, and you now work in it"
        )
        expect(tab.locator("#current-team")).to_have_text(f"Team: {name}")
        tab.goto("/links/")
        empty = tab.locator("#links-empty")
        expect(empty).to_contain_text(f"No links in the team {name} yet")
        # Nothing to filter or select: no filters, no bulk actions, no export.
        for selector in ("#filters", "#bulk", "#links"):
            expect(tab.locator(selector)).to_have_count(0)
        expect(tab.get_by_role("button", name="Export CSV")).to_have_count(0)
        expect(empty).to_contain_text("(1 link)")
        no_sideways_scrolling(tab)
        shoot(tab, f"links-new-team{suffix}")
        empty.get_by_role("button", name=owner.username).click()
        expect(tab.locator("#current-team")).to_have_text(f"Team: {owner.username}")
        expect(tab.locator("#links tbody tr", has_text=mine.slug)).to_have_count(1)
        context.close()


def test_a_csv_import_asks_before_it_creates_a_link_already_expired(browser, live_server, make_user):  # noqa: F811
    owner = make_user()
    for viewport, suffix in ((WIDE, ""), (PHONE, "-phone")):
        over, later = fresh("ov"), fresh("lt")
        long_title = "A title long enough to need a few lines in a narrow column of the preview table"
        csv_text = (
            "url,slug,title,tags,expires_at\n"
            f'https://example.com/over,{over},Over,"a,b",2020-01-01T00:00:00Z\n'
            f'https://example.com/{"later/" * 12},{later},{long_title},"spring,sale",2099-01-01T00:00:00Z\n'
        )
        context, tab = sign_in(browser, live_server, owner, viewport)
        tab.goto("/links/import/")
        expect(tab.locator("#id_file_helptext")).not_to_contain_text("`")
        tab.get_by_label("CSV file").set_input_files(
            files=[{"name": "links.csv", "mimeType": "text/csv", "buffer": csv_text.encode()}]
        )
        tab.get_by_role("button", name="Check the file").click()
        notice = tab.locator("#import-expired")
        expect(notice).to_contain_text("1 row expires at a time that has passed (line 2)")
        expect(tab.locator("#import-preview tbody tr")).to_have_count(2)
        no_sideways_scrolling(tab)
        fits = "(t) => t.scrollWidth <= t.parentElement.clientWidth"
        assert tab.locator("#import-preview").evaluate(fits)  # nothing cut off on the right
        shoot(tab, f"import-expired{suffix}")
        if suffix:  # on a phone: left out
            tab.get_by_role("button", name="Import the valid rows").click()
            expect(tab.locator("#import-status")).to_have_text("Done: 1 link created.")
            expect(tab.locator("#import-errors")).to_contain_text("This time has passed")
        else:
            notice.get_by_label("Import it too, expired").check()
            tab.get_by_role("button", name="Import the valid rows").click()
            expect(tab.locator("#import-status")).to_have_text("Done: 2 links created.")
            tab.goto("/links/?status=expired")
            expect(tab.locator("#links tbody tr")).to_have_count(1)
            expect(tab.locator("#links tbody tr")).to_contain_text(over)
        context.close()


def test_a_report_keeps_its_tables_inside_their_cards_and_todays_bar_in_sight(browser, live_server, make_user):  # noqa: F811
    owner = make_user()
    link = make_link(owner=owner, url="https://example.com/report", slug=fresh("rp"), title="Report")
    import_clicks(link, 3)
    for viewport, suffix in ((WIDE, ""), (PHONE, "-phone")):
        context, tab = sign_in(browser, live_server, owner, viewport)
        tab.goto(f"/links/{link.slug}/")
        expect(tab.locator("#breakdown-os")).to_contain_text("Windows")
        poking = tab.evaluate(
            """() => [...document.querySelectorAll(".breakdowns article")].filter((card) => {
                const table = card.querySelector("table").getBoundingClientRect(), box = card.getBoundingClientRect();
                return table.right > box.right - 1 || table.left < box.left + 1;
            }).map((card) => card.id)"""
        )
        assert poking == [], (viewport, poking)
        bar = tab.evaluate(
            """() => {
                const chart = Chart.getChart(document.querySelector("canvas[data-chart]"));
                const bars = chart.getSortedVisibleDatasetMetas().map((meta) => meta.data.at(-1));
                const box = chart.canvas.getBoundingClientRect(), figure = chart.canvas.parentElement.getBoundingClientRect();
                const labels = chart.scales.x.getLabelItems().map((item) => item.options.rotation);
                return {right: Math.max(...bars.map((b) => b.x + b.width / 2)), area: chart.chartArea.right,
                        width: chart.width, level: labels.every((rotation) => rotation === 0),
                        canvas: box.right, figure: figure.right, clicks: chart.data.datasets[0].data.at(-1)};
            }"""
        )
        assert bar["clicks"] == 3, bar
        assert bar["right"] <= bar["area"] + 0.5 and bar["canvas"] <= bar["figure"] + 0.5, (viewport, bar)
        assert bar["right"] <= bar["width"] - 6 and bar["level"], (viewport, bar)  # clear of the edge, labels level
        no_sideways_scrolling(tab)
        shoot(tab, f"report{suffix}")
        tab.locator("figure.chart").screenshot(path=SCREENSHOTS / f"report-chart{suffix}.png")
        context.close()


def test_a_domain_takes_one_line_urls_and_localhost_says_how_to_try_a_second_domain(
    browser,  # noqa: F811
    live_server,
    make_user,
):
    staff = make_user(is_staff=True)
    for viewport, suffix in ((WIDE, ""), (PHONE, "-phone")):
        context, tab = sign_in(browser, live_server, staff, viewport)
        tab.goto("/domains/")
        for label in ("Root redirect", "Not-found redirect", "Expired redirect"):
            field = tab.get_by_label(label, exact=False).first
            assert field.evaluate("(input) => input.tagName") == "INPUT", label
        tab.get_by_label("Host").fill("localhost")
        tab.get_by_role("button", name="Add", exact=True).click()
        error = tab.locator("#id_host_error")
        expect(error).to_contain_text("localhost is this machine")
        expect(error).to_contain_text("/etc/hosts")
        assert tab.evaluate("() => document.activeElement.id") == "id_host"
        no_sideways_scrolling(tab)
        shoot(tab, f"domains-localhost{suffix}")
        context.close()


def test_the_edges_own_pages_at_both_widths_under_their_policy(browser, edge, make_user):  # noqa: F811
    expired = make_link(owner=make_user(), url="https://example.com/gone", slug=fresh("eg"), expires_at=timezone.now())
    refused = []
    for viewport, suffix in ((WIDE, ""), (PHONE, "-phone")):
        context = browser.new_context(viewport=viewport, locale="de-DE")
        tab = context.new_page()
        tab.on("console", lambda message: refused.append(message.text) if "Content Security" in message.text else None)
        for path, status, title in (
            ("/" + fresh("nope"), 404, "Link nicht gefunden"),
            (f"/{expired.slug}", 410, "Link abgelaufen"),
        ):
            response = tab.goto(edge.url + path)
            assert response.status == status
            expect(tab.get_by_role("heading", name=title)).to_be_visible()
            # Its style applied: the policy allows it by its hash.
            assert tab.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(246, 248, 250)"
            no_sideways_scrolling(tab)
            shoot(tab, f"edge-{status}{suffix}")
        assert refused == []
        context.close()

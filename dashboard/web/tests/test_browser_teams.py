"""A team in a real browser: an admin adds a colleague as a viewer, who
signs in, finds the team's links and reports, and no way to change them."""

import re

import pytest
from playwright.sync_api import expect

from teams.services import team_create
from testing.factories import PASSWORD, fresh, make_link

from .test_browser import SCREENSHOTS, browser  # noqa: F401 (the Chromium fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def sign_in(browser, live_server, user, viewport: dict | None = None, **options):  # noqa: F811
    """A browser context of its own (Playwright's `options` for it), signed in as `user`; and its tab."""
    context = browser.new_context(
        base_url=live_server.url, viewport=viewport or {"width": 1280, "height": 900}, **options
    )
    context.set_default_timeout(15_000)
    tab = context.new_page()
    tab.goto("/sign-in/")
    tab.get_by_label("Username").fill(user.username)
    tab.get_by_label("Password").fill(PASSWORD)
    tab.get_by_role("button", name="Sign in", exact=True).click()
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    return context, tab


def switch_to(tab, team_name: str) -> None:
    tab.locator("#current-team").click()
    tab.get_by_role("button", name=re.compile(re.escape(team_name))).click()
    expect(tab.locator("#current-team")).to_have_text(f"Team: {team_name}")


def test_an_admin_adds_a_viewer_who_reads_but_cannot_edit(browser, live_server, make_user):  # noqa: F811
    admin, viewer = make_user(), make_user()
    team = team_create(actor=admin, name="Campaigns")
    slug = fresh("tm")
    make_link(owner=admin, team=team, url="https://example.com/spring", slug=slug, title="Spring sale")

    context, tab = sign_in(browser, live_server, admin)
    switch_to(tab, "Campaigns")
    tab.locator("#current-team").click()
    tab.get_by_role("link", name=re.compile("^Members")).click()
    tab.locator("#add-member").get_by_label("User name").fill(viewer.username)
    tab.locator("#add-member").get_by_label("Role").select_option("viewer")
    tab.get_by_role("button", name="Add member").click()
    expect(tab.get_by_text(f"Added {viewer.username} as viewer.")).to_be_visible()
    expect(tab.locator("#members")).to_contain_text(viewer.username)
    context.close()

    context, tab = sign_in(browser, live_server, viewer)
    switch_to(tab, "Campaigns")
    tab.get_by_role("link", name="Links", exact=True).click()
    expect(tab.get_by_role("heading", name="Links", exact=True)).to_be_visible()
    expect(tab.get_by_text(slug).first).to_be_visible()
    expect(tab.get_by_role("button", name="New link")).to_have_count(0)
    expect(tab.get_by_role("button", name="Import CSV")).to_have_count(0)
    tab.goto(f"/links/{slug}/")
    expect(tab.get_by_role("heading", name="Spring sale")).to_be_visible()
    expect(tab.get_by_role("heading", name="Breakdowns")).to_be_visible()
    for name in ("Edit", "Disable", "Delete"):
        expect(tab.get_by_role("button", name=name)).to_have_count(0)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=SCREENSHOTS / "team-viewer-link.png", full_page=True)
    assert tab.goto(f"/links/{slug}/edit/").status == 403
    context.close()


def no_sideways_scrolling(tab) -> None:
    sizes = tab.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth})"
    )
    assert sizes["scroll"] <= sizes["client"], sizes


def test_an_admin_renames_then_deletes_a_team_on_a_phone(browser, live_server, make_user):  # noqa: F811
    admin = make_user()
    team = team_create(actor=admin, name="Campaigns")
    context, tab = sign_in(browser, live_server, admin)
    switch_to(tab, "Campaigns")
    tab.set_viewport_size({"width": 390, "height": 844})
    tab.goto(f"/teams/{team.pk}/")
    rename = tab.locator("#rename-team")
    rename.get_by_label("Name").fill(" ")
    rename.get_by_role("button", name="Rename").click()
    expect(tab.locator("#rename-team .field-error")).to_be_visible()
    tab.locator("#rename-team").get_by_label("Name").fill("Spring campaigns")
    tab.locator("#rename-team").get_by_role("button", name="Rename").click()
    expect(tab.get_by_text("The team is now called Spring campaigns.")).to_be_visible()
    expect(tab.locator("#current-team")).to_have_text("Team: Spring campaigns")
    no_sideways_scrolling(tab)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=SCREENSHOTS / "team-detail-phone.png", full_page=True)

    tab.get_by_role("button", name="Delete team").click()
    expect(tab.get_by_role("heading", name="Delete the team Spring campaigns?")).to_be_visible()
    no_sideways_scrolling(tab)
    tab.screenshot(path=SCREENSHOTS / "team-delete-phone.png", full_page=True)
    tab.set_viewport_size({"width": 1280, "height": 900})
    tab.get_by_role("button", name="Delete Spring campaigns").click()
    expect(tab.get_by_text("Deleted the team Spring campaigns.")).to_be_visible()
    expect(tab.locator("#teams")).not_to_contain_text("Spring campaigns")
    expect(tab.locator("#current-team")).to_have_text(f"Team: {admin.username}")
    context.close()

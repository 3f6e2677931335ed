"""A team's "Visits kept" in a real browser (Playwright driving Debian's
headless Chromium, under the pages' real CSP), at a desktop's and a phone's
width: an admin sets how long the team keeps its visits and what of its
visitors' addresses, the browser holding back a number of days out of
bounds, and finds the change in the audit log, with the form never wider
than the screen (and the audit log's page not either). The form's details and the API: teams/tests/test_visit_settings.py."""

import pytest
from playwright.sync_api import expect

from teams.models import Team
from teams.services import team_create
from testing.factories import fresh

from .test_browser import SCREENSHOTS, browser  # noqa: F401 (the Chromium fixture)
from .test_browser_tables import MISFITS
from .test_browser_teams import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
# What of a part of the page reaches past the screen's edges.
OFF_SCREEN = """(selector) => [document.querySelector(selector), ...document.querySelectorAll(`${selector} *`)]
    .filter((element) => {
        const where = element.getBoundingClientRect();
        return where.width && (where.left < 0 || where.right > document.documentElement.clientWidth + 0.5);
    })
    .map((element) => `${element.tagName.toLowerCase()}#${element.id}: ${Math.round(element.getBoundingClientRect().right)}`)"""


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_an_admin_sets_how_long_visits_are_kept_and_what_of_an_address(
    browser,  # noqa: F811 (the fixture imported above)
    live_server,
    make_user,
    settings,
    viewport,
):
    settings.CLICK_IP_PRIVACY = "anonymise"
    settings.CLICK_RETENTION_ROLLUPS = "keep"
    admin = make_user()
    team = team_create(actor=admin, name=fresh("Newsletters "))
    context, tab = sign_in(browser, live_server, admin, viewport=VIEWPORTS[viewport])
    refused = []
    tab.on("console", lambda message: "Content Security Policy" in message.text and refused.append(message.text))
    tab.on("pageerror", lambda error: refused.append(f"page error: {error}"))
    tab.goto(f"/teams/{team.pk}/")
    form = tab.locator("#visit-settings")
    expect(tab.get_by_role("heading", name="Visits kept")).to_be_visible()
    expect(tab.locator("#visits-kept")).to_contain_text("the reports by hour and day go on counting them")
    days, addresses = (
        form.get_by_label("Delete visits older than (days)"),
        form.get_by_label("Visitors' addresses kept"),
    )
    expect(addresses.locator("option:checked")).to_have_text(
        "as the service keeps them: anonymised (IPv4 /24, IPv6 /48)"
    )
    assert tab.evaluate(OFF_SCREEN, "#visits-kept") == [] and tab.evaluate(MISFITS) == [], "the team's page"

    # No days at all: the browser holds the form back and says why.
    days.fill("0")
    form.get_by_role("button", name="Save").click()
    assert days.evaluate("(input) => input.validity.rangeUnderflow")
    assert Team.objects.get(pk=team.pk).visit_retention_days is None

    days.fill("30")
    addresses.select_option(label="not at all")
    form.get_by_role("button", name="Save").click()
    expect(tab.get_by_text("Saved how the team keeps its visits.")).to_be_visible()
    expect(tab.locator("#visit-settings").get_by_label("Delete visits older than (days)")).to_have_value("30")
    team.refresh_from_db()
    assert (team.visit_retention_days, team.ip_storage) == (30, "none")
    tab.screenshot(path=SCREENSHOTS / f"team-visits-kept-{viewport}.png", full_page=True)
    assert tab.evaluate(OFF_SCREEN, "#visits-kept") == [] and tab.evaluate(MISFITS) == [], "the team's page, saved"

    tab.goto(f"/teams/{team.pk}/audit/")
    expect(tab.get_by_text("changed how long visits are kept")).to_be_visible()
    expect(tab.get_by_text("changed what is kept of visitors' addresses")).to_be_visible()
    assert tab.evaluate(MISFITS) == [], "the audit log"
    assert refused == []
    context.close()

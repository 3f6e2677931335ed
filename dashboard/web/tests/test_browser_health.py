"""Broken links in a real browser, at 1280 and 390 px, under the pages'
CSP: the list's mark and its Destination filter, the link's page with its
last check. Screenshots in .test-artifacts/screenshots/."""

import re
from datetime import datetime, timezone

import pytest
from playwright.sync_api import expect

from health.models import Reason
from health.probe import Outcome
from health.services import record
from testing.factories import fresh, make_link

from .test_browser import SCREENSHOTS, browser  # noqa: F401 (the Chromium fixture)
from .test_browser_forms import PHONE, shoot
from .test_browser_teams import no_sideways_scrolling, sign_in

pytestmark = pytest.mark.django_db(transaction=True)

WIDE = {"width": 1280, "height": 900}


def test_broken_links_are_marked_filtered_and_explained_at_both_widths(browser, live_server, make_user):  # noqa: F811
    owner = make_user()
    long_url = "https://example.com/" + "/".join(["averyveryverylongpathsegment"] * 4)
    broken = make_link(owner=owner, url=long_url, slug=fresh("br"), title="A campaign")
    fine = make_link(owner=owner, url="https://example.com/fine", slug=fresh("ok"))
    at = datetime(2026, 11, 20, 8, 30, tzinfo=timezone.utc)
    detail = "the TLS handshake with example.com failed: certificate has expired"
    record(link=broken, url=broken.url, outcome=Outcome(Reason.TLS, None, detail, long_url), at=at)
    record(link=fine, url=fine.url, outcome=Outcome("", 200, "answered 200 OK", fine.url), at=at)
    context, tab = sign_in(browser, live_server, owner, WIDE)
    refused = []
    tab.on("console", lambda message: refused.append(message.text) if "Content Security" in message.text else None)

    tab.goto("/links/")
    rows = tab.locator("#links tbody tr")
    mark = rows.filter(has_text=broken.slug).locator("small.broken")
    expect(mark).to_have_text("Broken: TLS error since 2026-11-20")
    expect(mark).to_have_attribute("title", detail)
    expect(rows.filter(has_text=fine.slug).locator("small.broken")).to_have_count(0)
    fits = "() => document.querySelector('#links').scrollWidth <= document.querySelector('#links').parentElement.clientWidth"
    assert tab.evaluate(fits)
    tab.get_by_label("Destination").select_option("broken")
    tab.get_by_role("button", name="Apply").click()
    expect(tab).to_have_url(re.compile("health=broken"))
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(broken.slug)
    shoot(tab, "links-list-broken")

    tab.get_by_role("link", name=broken.slug).click()
    expect(tab.locator("#link-broken")).to_contain_text("TLS error")
    expect(tab.locator("#link-broken")).to_contain_text("since 2026-11-20 08:30")
    expect(tab.locator("#link-health")).to_contain_text("Broken when last checked")
    shoot(tab, "link-broken")

    tab.set_viewport_size(PHONE)
    no_sideways_scrolling(tab)
    expect(tab.locator("#link-broken")).to_be_visible()
    shoot(tab, "link-broken-phone")
    tab.goto("/links/?health=broken")
    expect(mark).to_be_visible()
    no_sideways_scrolling(tab)
    shoot(tab, "links-list-broken-phone")
    assert refused == []
    context.close()

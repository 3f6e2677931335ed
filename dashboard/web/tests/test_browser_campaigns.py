"""A team's UTM templates and the campaign report in a real browser, under
the real CSP, at 1280 and 390 px: a template made on its page, picked in
the link form's UTM builder (which writes it into the target URL), the
link visited through a real edge, its click imported and counted under
the template's campaign and source."""

import re

import pytest
from playwright.sync_api import expect

from links.models import Link, UtmTemplate
from testing.factories import fresh

from .test_browser import SCREENSHOTS, browser, import_until_counted, page  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1280, "height": 900}
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"


def fits(tab, name: str) -> None:
    for size, suffix in ((PHONE, "-phone"), (WIDE, "")):
        tab.set_viewport_size(size)
        assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), name + suffix
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=SCREENSHOTS / f"{name}{suffix}.png", full_page=True)


def test_a_template_picked_in_the_form_tags_the_link_and_its_click_counts_under_its_campaign(
    page,  # noqa: F811
    user,
    edge,
    settings,
):
    settings.EDGE_BASE_URL = edge.url
    refused = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    page.locator(".nav-wide").get_by_text("Campaigns", exact=True).click()
    page.locator(".nav-wide").get_by_role("link", name="UTM templates").click()
    expect(page.get_by_role("heading", name=re.compile("UTM templates of"))).to_be_visible()
    expect(page.locator("#no-utm-templates")).to_be_visible()
    # Nothing filled in but the name: refused, kept.
    page.get_by_label("Name").fill("Spring newsletter")
    page.get_by_role("button", name="Make it").click()
    expect(page.locator(".error-summary")).to_contain_text("Fill in at least one UTM parameter")
    expect(page.get_by_label("Name")).to_have_value("Spring newsletter")
    page.get_by_label("utm_source").fill("newsletter")
    page.get_by_label("utm_medium").fill("email")
    page.get_by_label("utm_campaign").fill("spring")
    page.get_by_role("button", name="Make it").click()
    expect(page.locator("#utm-templates")).to_contain_text("Spring newsletter")
    fits(page, "utm-templates")

    slug = fresh("utm")
    page.goto("/links/new/")
    page.get_by_label("Target URL").fill("https://shop.example/spring?ref=1")
    page.get_by_label("Slug").fill(slug)
    page.locator("#utm-builder > summary").click()
    page.get_by_label("Fill in from a UTM template").select_option(label="Spring newsletter")
    expect(page.locator("[data-utm=utm_campaign]")).to_have_value("spring")
    expect(page.get_by_label("Target URL")).to_have_value(
        "https://shop.example/spring?ref=1&utm_source=newsletter&utm_medium=email&utm_campaign=spring"
    )
    fits(page, "link-form-utm-template")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(re.compile(f"Created .*/{slug}"))).to_be_visible()
    link = Link.objects.get(slug=slug)
    assert link.url == "https://shop.example/spring?ref=1&utm_source=newsletter&utm_medium=email&utm_campaign=spring"

    response = edge.request(f"/{slug}", headers={"User-Agent": FIREFOX})
    assert response.status == 302 and response.headers["Location"] == link.url
    import_until_counted(link, 1)
    page.goto("/campaigns/")
    row = page.locator("#campaigns tbody tr", has_text="newsletter")
    expect(row.locator("td[data-label=Campaign]")).to_have_text("spring")
    expect(row.locator("td[data-label=Clicks]")).to_have_text("1")
    fits(page, "campaigns")

    template = UtmTemplate.objects.get(name="Spring newsletter")
    page.goto("/utm-templates/")
    page.get_by_role("link", name="Edit Spring newsletter").click()
    page.get_by_label("utm_campaign").fill("summer")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#utm-templates")).to_contain_text("summer")
    page.get_by_role("button", name="Delete Spring newsletter").click()
    expect(page.locator("#no-utm-templates")).to_be_visible()
    assert not UtmTemplate.objects.filter(pk=template.pk).exists()
    assert refused == []

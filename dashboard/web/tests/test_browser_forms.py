"""The link form in a real browser: every error at once with a summary and
the focus on the first, the builder of redirect rules and A/B split, an
expiry that has passed, URLs typed as people type them, and checkboxes
whose help stays clear of their label. At 1280 and 390 px, with
screenshots in .test-artifacts/screenshots/."""

import re
import time

import pytest
from playwright.sync_api import expect

from links.models import Link
from links.selectors import LinkState, link_state
from testing.factories import fresh, make_link

from .test_browser import SCREENSHOTS, browser, page  # noqa: F401 (the Chromium and signed-in tab fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}


def shoot(tab, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


def focused(tab) -> str:
    """The focused element's id, or its aria-label."""
    return tab.evaluate("() => document.activeElement.id || document.activeElement.getAttribute('aria-label')")


def open_rules(tab) -> None:
    tab.locator("#rules-editor > summary").click()
    expect(tab.locator("#rules-builder")).to_be_visible()


def test_every_error_shows_at_once_with_a_summary_linking_to_each_field(page, user):  # noqa: F811
    taken = make_link(owner=user, url="https://example.com/taken", slug=fresh("tk"))
    for viewport, suffix in (({"width": 1280, "height": 900}, ""), (PHONE, "-phone")):
        page.set_viewport_size(viewport)
        page.goto("/links/new/")
        page.get_by_label("Target URL").fill("example.com/page")
        page.get_by_label("Slug").fill(taken.slug)
        open_rules(page)
        page.get_by_role("button", name="Add a rule").click()
        page.get_by_label("Rule 1, condition 1: what is compared").select_option("language")
        page.get_by_label("Rule 1, condition 1: language").fill("klingon")
        page.locator("#rules-builder").get_by_placeholder("https://").fill("https://example.com/rule")
        page.locator("#rules-editor > summary").click()  # folded again: the error must still be found
        page.get_by_role("button", name="Save").click()

        summary = page.locator(".error-summary")
        expect(summary).to_be_visible()
        expect(summary).to_contain_text("Fix these 3 things first")
        expect(summary.get_by_role("link", name="Target URL")).to_be_visible()
        expect(summary).to_contain_text("did you mean https://example.com/page?")
        expect(summary).to_contain_text("Link with this Slug already exists.")  # not hidden by the bad rule
        expect(summary).to_contain_text("Rule 1, condition 1, its value: 'klingon' is not a language tag")
        # The focus starts on the first field in error.
        assert focused(page) == "id_url"
        # The rule's error is at its row, and its link in the summary leads there, opening what hides it.
        language = page.get_by_label("Rule 1, condition 1: language")
        expect(language).to_have_attribute("aria-invalid", "true")
        expect(page.locator("#rules-builder")).to_contain_text("'klingon' is not a language tag")
        shoot(page, f"form-errors{suffix}")
        page.locator("#rules-editor > summary").click()
        expect(language).to_be_hidden()
        summary.get_by_role("link", name="Redirect rules").click()
        expect(language).to_be_visible()
        assert focused(page) == "Rule 1, condition 1: language"
        summary.get_by_role("link", name="Slug").click()
        assert focused(page) == "id_slug"
    assert not Link.objects.filter(url="https://example.com/page").exists()


def test_the_builder_writes_rules_and_a_split_the_edge_takes(page, user):  # noqa: F811
    slug = fresh("rb")
    page.goto("/links/new/")
    page.get_by_label("Target URL").fill("https://example.com/default")
    page.get_by_label("Slug").fill(slug)
    open_rules(page)
    builder = page.locator("#rules-builder")
    # Rule 1: iPhones; rule 2: German speakers in Germany, who came from the newsletter.
    page.get_by_role("button", name="Add a rule").click()
    page.get_by_label("Rule 1, condition 1: device").select_option("ios")
    builder.locator('[data-row="0"]').get_by_placeholder("https://").fill("https://example.com/ios")
    page.get_by_role("button", name="Add a rule").click()
    page.get_by_label("Rule 2, condition 1: what is compared").select_option("language")
    page.get_by_label("Rule 2, condition 1: language").fill("de")
    page.get_by_role("button", name="Add a condition to rule 2").click()
    page.get_by_label("Rule 2, condition 2: country").fill("DE")
    page.get_by_role("button", name="Add a condition to rule 2").click()
    page.get_by_label("Rule 2, condition 3: what is compared").select_option("query")
    page.get_by_label("Rule 2, condition 3: parameter").fill("ref")
    page.get_by_label("Rule 2, condition 3: value").fill("mail")
    builder.locator('[data-row="1"]').get_by_placeholder("https://").fill("https://example.de/fruehling")
    # Reorder: rule 2 first; a condition too many taken away.
    page.get_by_role("button", name="Move rule 2 up").click()
    expect(page.get_by_role("button", name="Move rule 1 down")).to_be_focused()  # the rule moved, now first
    page.get_by_role("button", name="Remove rule 1, condition 3").click()
    # The split: two targets at once, weighted 70 and 30.
    page.get_by_role("button", name="Split the visitors").click()
    split = page.locator("#split-builder")
    split.locator('[data-row="0"]').get_by_label("URL").fill("https://example.com/a")
    split.locator('[data-row="0"]').get_by_label("Weight").fill("70")
    split.locator('[data-row="1"]').get_by_label("URL").fill("https://example.com/b")
    split.locator('[data-row="1"]').get_by_label("Weight").fill("30")
    expect(split.locator('[data-row="0"] .share')).to_have_text("70% of visitors")
    expect(split.locator('[data-row="1"] .share')).to_have_text("30% of visitors")
    # The JSON, for the API and for pasting, says the same.
    page.locator("#rules-json > summary").click()
    assert '"type":"language","value":"de"' in page.locator("#id_rules").input_value()
    shoot(page, "rules-builder")
    page.set_viewport_size(PHONE)
    shoot(page, "rules-builder-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(re.compile(f"Created .*/{slug}"))).to_be_visible()

    link = Link.objects.get(slug=slug)
    assert link.rules == [
        {
            "url": "https://example.de/fruehling",
            "conditions": [{"type": "language", "value": "de"}, {"type": "country", "value": "DE"}],
        },
        {"url": "https://example.com/ios", "conditions": [{"type": "device", "value": "ios"}]},
    ]
    assert link.split == [
        {"url": "https://example.com/a", "weight": 70},
        {"url": "https://example.com/b", "weight": 30},
    ]

    # Edited again: the rows are those of the link; a rule removed, the rest kept.
    page.goto(f"/links/{slug}/edit/")
    expect(page.locator("#rules-json")).not_to_have_attribute("open", "")
    expect(page.get_by_label("Rule 1, condition 2: country")).to_have_value("DE")
    page.get_by_role("button", name="Remove rule 1", exact=True).click()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved.")).to_be_visible()
    link.refresh_from_db()
    assert link.rules == [{"url": "https://example.com/ios", "conditions": [{"type": "device", "value": "ios"}]}]
    assert len(link.split) == 2


def test_the_builder_offers_address_browser_and_date_conditions(page, user):  # noqa: F811
    slug = fresh("rn")
    page.goto("/links/new/")
    page.get_by_label("Target URL").fill("https://example.com/default")
    page.get_by_label("Slug").fill(slug)
    open_rules(page)
    builder = page.locator("#rules-builder")
    # Rule 1: the office network on Edge; rule 2: January 2030 on a Chromebook.
    page.get_by_role("button", name="Add a rule").click()
    page.get_by_label("Rule 1, condition 1: what is compared").select_option("ip")
    page.get_by_label("Rule 1, condition 1: ip").fill("192.168.1.*")
    page.get_by_role("button", name="Add a condition to rule 1").click()
    page.get_by_label("Rule 1, condition 2: what is compared").select_option("browser")
    expect(page.get_by_label("Rule 1, condition 2: browser")).to_have_value("chrome")
    page.get_by_label("Rule 1, condition 2: browser").select_option("edge")
    builder.locator('[data-row="0"]').get_by_placeholder("https://").fill("https://example.com/office")
    page.get_by_role("button", name="Add a rule").click()
    page.get_by_label("Rule 2, condition 1: what is compared").select_option("after")
    page.get_by_label("Rule 2, condition 1: after, in your time zone").fill("2030-01-01T00:00:00")
    page.get_by_role("button", name="Add a condition to rule 2").click()
    page.get_by_label("Rule 2, condition 2: what is compared").select_option("before")
    page.get_by_label("Rule 2, condition 2: before, in your time zone").fill("2030-02-01T00:00:00")
    page.get_by_role("button", name="Add a condition to rule 2").click()
    page.get_by_label("Rule 2, condition 3: what is compared").select_option("device")
    page.get_by_label("Rule 2, condition 3: device").select_option("chromeos")
    builder.locator('[data-row="1"]').get_by_placeholder("https://").fill("https://example.com/january")
    # The browser's time zone is the person's: the link keeps the moment in UTC.
    after, before = (
        page.evaluate(f"() => new Date('{moment}').toISOString().replace('.000Z', 'Z')")
        for moment in ("2030-01-01T00:00:00", "2030-02-01T00:00:00")
    )
    page.locator("#rules-json > summary").click()
    assert f'{{"type":"after","value":"{after}"}}' in page.locator("#id_rules").input_value()
    shoot(page, "rules-builder-conditions")
    page.set_viewport_size(PHONE)
    for part in ("Rule 1, condition 2: browser", "Rule 2, condition 1: after, in your time zone"):
        box = page.get_by_label(part).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], (part, box)
    shoot(page, "rules-builder-conditions-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(re.compile(f"Created .*/{slug}"))).to_be_visible()
    assert Link.objects.get(slug=slug).rules == [
        {
            "url": "https://example.com/office",
            "conditions": [{"type": "ip", "value": "192.168.1.*"}, {"type": "browser", "value": "edge"}],
        },
        {
            "url": "https://example.com/january",
            "conditions": [
                {"type": "after", "value": after},
                {"type": "before", "value": before},
                {"type": "device", "value": "chromeos"},
            ],
        },
    ]
    # Edited again: the moments shown in the person's time, the address refused with its reason.
    page.goto(f"/links/{slug}/edit/")
    expect(page.get_by_label("Rule 2, condition 1: after, in your time zone")).to_have_value(
        "2030-01-01T00:00"
    )  # seconds of 0 left out, as Chromium does
    page.get_by_label("Rule 1, condition 1: ip").fill("192.168.1.0/33")
    page.get_by_role("button", name="Save").click()
    expect(builder).to_contain_text("'192.168.1.0/33' is not an IP address")
    expect(page.get_by_label("Rule 1, condition 1: ip")).to_have_attribute("aria-invalid", "true")


def test_json_typed_in_the_box_draws_the_rows_and_json_that_does_not_parse_stays_in_the_box(page, user):  # noqa: F811
    page.goto("/links/new/")
    open_rules(page)
    page.locator("#rules-json > summary").click()
    page.locator("#id_rules").fill(
        '[{"url": "https://example.com/m", "conditions": [{"type": "device", "value": "android"}]}]'
    )
    expect(page.get_by_label("Rule 1, condition 1: device")).to_have_value("android")
    page.locator("#id_rules").fill('[{"url": ')
    expect(page.locator("#rules-builder")).to_be_hidden()
    expect(page.locator("#id_rules")).to_be_visible()


def test_an_expiry_that_has_passed_is_saved_only_once_confirmed(page, user):  # noqa: F811
    slug = fresh("ex")
    page.goto("/links/new/")
    page.get_by_label("Target URL").fill("https://example.com/over")
    page.get_by_label("Slug").fill(slug)
    page.get_by_label("Expires at").fill("2020-01-01T10:00")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".error-summary")).to_contain_text("This time has passed")
    assert focused(page) == "id_expires_at"
    assert not Link.objects.filter(slug=slug).exists()
    shoot(page, "form-expired")
    page.get_by_role("checkbox", name="Save it expired").check()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(re.compile(f"Created .*/{slug}"))).to_be_visible()
    assert link_state(Link.objects.get(slug=slug)) == LinkState.EXPIRED
    # Edited without touching the expiry: nothing to confirm again.
    page.goto(f"/links/{slug}/edit/")
    page.get_by_label("Title", exact=True).fill("Over")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved.")).to_be_visible()


def test_a_fallback_for_after_the_end_is_typed_refused_when_not_a_web_address_and_cleared(page, user):  # noqa: F811
    slug = fresh("fb")
    page.goto("/links/new/")
    page.get_by_label("Target URL").fill("https://example.com/sale")
    page.get_by_label("Slug").fill(slug)
    page.get_by_label("Visit limit").fill("100")
    page.get_by_label("After it expires").fill("javascript:alert(1)")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("link", name="After it expires")).to_be_visible()  # in the summary of errors
    assert not Link.objects.filter(slug=slug).exists()
    page.get_by_label("After it expires").fill("https://example.com/sale-over")
    for size, name in ((PHONE, "fallback-phone"), ({"width": 1280, "height": 900}, "fallback")):
        page.set_viewport_size(size)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert page.get_by_label("After it expires").evaluate("(input) => input.tagName") == "INPUT"
        shoot(page, name)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(re.compile(f"Created .*/{slug}"))).to_be_visible()
    link = Link.objects.get(slug=slug)
    assert (link.expired_url, link.max_visits) == ("https://example.com/sale-over", 100)
    page.goto(f"/links/{slug}/edit/")
    expect(page.get_by_label("After it expires")).to_have_value("https://example.com/sale-over")
    page.get_by_label("After it expires").fill("")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved.")).to_be_visible()
    link.refresh_from_db()
    assert link.expired_url == ""


def test_words_are_not_a_url(page, user):  # noqa: F811
    page.goto("/links/new/")
    page.get_by_label("Target URL").fill("example dot com")
    page.get_by_role("button", name="Save").click()
    error = page.locator("#id_url_error")
    expect(error).to_contain_text("“example dot com” is not a URL")
    expect(error).not_to_contain_text("control characters")


def _overlaps(tab, label_text: str) -> bool:
    """Whether a checkbox's label and its help overlap on the page."""
    return tab.evaluate(
        """(text) => {
            const label = [...document.querySelectorAll("label")].find((l) => l.textContent.trim() === text);
            const help = document.getElementById(label.htmlFor + "_helptext");
            const a = label.getBoundingClientRect(), b = help.getBoundingClientRect();
            return a.bottom > b.top + 1 && b.bottom > a.top + 1;
        }""",
        label_text,
    )


def test_a_checkboxs_help_stays_clear_of_its_label(page, user):  # noqa: F811
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    for viewport, suffix in (({"width": 1280, "height": 900}, ""), (PHONE, "-phone")):
        page.set_viewport_size(viewport)
        page.goto("/links/new/")
        for label in ("Forward query string", "Crawlable"):
            assert not _overlaps(page, label), (label, viewport)
        shoot(page, f"form-checkboxes{suffix}")
        page.goto("/domains/")
        assert not _overlaps(page, "Redirect HTTP to HTTPS"), viewport


def test_an_apps_targets_are_set_in_their_own_section_and_refused_when_not_a_web_address(page, user):  # noqa: F811
    slug = fresh("app")
    page.goto("/links/new/")
    page.get_by_label("Target URL").fill("https://example.com/web")
    page.get_by_label("Slug").fill(slug)
    expect(page.get_by_label("iOS URL")).to_be_hidden()  # folded until opened
    page.locator("#app-targets > summary").click()
    page.get_by_label("iOS URL").fill("javascript:alert(1)")
    page.get_by_label("Android URL").fill("https://play.google.com/store/apps/details?id=com.example.app")
    page.get_by_role("button", name="Save").click()
    # Refused, the section open again with the field's error, what was typed kept.
    expect(page.locator("#app-targets")).to_have_attribute("open", "")
    expect(page.get_by_role("link", name="iOS URL")).to_be_visible()  # in the summary of errors
    expect(page.get_by_label("Android URL")).to_have_value(
        "https://play.google.com/store/apps/details?id=com.example.app"
    )
    page.get_by_label("iOS URL").fill("https://apps.apple.com/app/id1")
    for size, name in ((PHONE, "app-targets-phone"), ({"width": 1280, "height": 900}, "app-targets")):
        page.set_viewport_size(size)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        shoot(page, name)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(re.compile(f"Created .*/{slug}"))).to_be_visible()
    link = Link.objects.get(slug=slug)
    assert (link.ios_url, link.android_url) == (
        "https://apps.apple.com/app/id1",
        "https://play.google.com/store/apps/details?id=com.example.app",
    )
    page.goto(f"/links/{slug}/edit/")
    expect(page.locator("#app-targets")).to_have_attribute("open", "")
    page.get_by_label("iOS URL").fill("")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved.")).to_be_visible()
    link.refresh_from_db()
    assert link.ios_url == "" and link.android_url.startswith("https://play.google.com/")


def image_loaded(tab) -> None:
    """Waits for the card's image to have loaded (polled from here: the
    page's CSP refuses the eval of Playwright's wait_for_function)."""
    deadline = time.monotonic() + 5
    while not tab.locator("#preview-card-image").evaluate("img => img.complete && img.naturalWidth > 0"):
        assert time.monotonic() < deadline, "the card's image did not load"
        time.sleep(0.05)


def test_a_social_preview_is_drawn_as_it_is_typed_and_shown_on_the_links_page_under_the_csp(page, user):  # noqa: F811
    """The card of the form and of the link's page loads its image from
    where the link says (HTTPS, allowed by those pages' CSP alone), text
    shown as text; at 390 and 1280 px, nothing wider than the screen."""
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf000000030101009a5d3ab40000000049454e44ae426082"
    )
    page.route("https://cards.example/**", lambda route: route.fulfill(status=200, content_type="image/png", body=png))
    refused = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    slug = fresh("pvw")
    page.goto("/links/new/")
    page.get_by_label("Target URL").fill("https://example.com/spring")
    page.get_by_label("Slug").fill(slug)
    expect(page.locator("#preview-card")).to_be_hidden()  # folded, and empty
    page.locator("#social-preview > summary").click()
    page.get_by_label("Preview title").fill("Spring <b>sale</b>")
    page.get_by_label("Preview description").fill("Every coat, until March's end.")
    page.get_by_label("Preview image URL").fill("https://cards.example/spring.png")
    card = page.locator("#preview-card")
    expect(card).to_be_visible()
    expect(card.locator("#preview-card-title")).to_have_text("Spring <b>sale</b>")
    expect(card.locator("#preview-card-image")).to_be_visible()
    image_loaded(page)
    for size, name in ((PHONE, "social-preview-phone"), ({"width": 1280, "height": 900}, "social-preview")):
        page.set_viewport_size(size)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        shoot(page, name)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(re.compile(f"Created .*/{slug}"))).to_be_visible()
    link = Link.objects.get(slug=slug)
    assert (link.preview_title, link.preview_image_url) == ("Spring <b>sale</b>", "https://cards.example/spring.png")
    shown = page.locator("#link-preview #preview-card")
    expect(shown.locator("#preview-card-title")).to_have_text("Spring <b>sale</b>")
    expect(shown.locator("#preview-card-host")).to_have_text(link.domain.host)
    image_loaded(page)
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shoot(page, "social-preview-link-phone")
    assert refused == []


def test_an_image_uploaded_for_the_preview_is_drawn_before_saving_and_shown_after(page, user, tmp_path):  # noqa: F811
    from PIL import Image

    picture = tmp_path / "card.png"
    Image.new("RGB", (1200, 630), (10, 120, 200)).save(picture)
    (tmp_path / "notes.txt").write_text("not an image")
    refused = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    slug = fresh("pvu")
    page.goto("/links/new/")
    page.get_by_label("Target URL").fill("https://example.com/upload")
    page.get_by_label("Slug").fill(slug)
    page.locator("#social-preview > summary").click()
    page.get_by_label("Preview title").fill("Uploaded")
    # Not an image: refused, the rest kept, nothing made.
    page.get_by_label("Or upload an image").set_input_files(tmp_path / "notes.txt")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".error-summary")).to_contain_text("not an image Slingshot can read")
    expect(page.get_by_label("Preview title")).to_have_value("Uploaded")
    assert not Link.objects.filter(slug=slug).exists()
    page.get_by_label("Or upload an image").set_input_files(picture)
    expect(page.locator("#preview-card-image")).to_be_visible()
    image_loaded(page)  # the chosen file, drawn from the browser (blob:)
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shoot(page, "social-preview-upload-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(re.compile(f"Created .*/{slug}"))).to_be_visible()
    link = Link.objects.get(slug=slug)
    assert link.preview_image.endswith(".png")
    image_loaded(page)  # on the link's page, from the dashboard
    page.goto(f"/links/{slug}/edit/")
    expect(page.locator("#social-preview")).to_have_attribute("open", "")
    page.get_by_label("Remove the uploaded image").check()
    expect(page.locator("#preview-card-image")).to_be_hidden()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved.")).to_be_visible()
    link.refresh_from_db()
    assert link.preview_image == "" and link.preview_title == "Uploaded"
    assert refused == []

"""A team's webhooks in a real browser (Playwright driving Debian's headless
Chromium, under the pages' real CSP), at a desktop's and a phone's width:
an admin adds a webhook with a long URL to a receiver on loopback, copies
its secret, sends a test event that the deliverer (`manage.py
deliver_webhooks --once`, as the server runs it) delivers signed, reads it
in the delivery log, redelivers it, rotates the secret and changes its
events, with the page never wider than the screen. The form's and the pages' details:
test_webhook_pages.py."""

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from webhooks.tests import conftest as webhook_fixtures

from .test_browser import SCREENSHOTS, browser  # noqa: F401 (the Chromium fixture)
from .test_browser_tables import MISFITS
from .test_browser_teams import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

# The webhooks app's fixtures: a receiver on loopback and the settings that let a webhook reach it.
webhook_settings, receiver = webhook_fixtures.webhook_settings, webhook_fixtures.receiver
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def open_webhooks(tab, viewport: str) -> None:
    """From the navigation: the API menu on a desktop, the one menu on a phone."""
    if viewport == "phone":
        tab.locator(".nav-menu summary").click()
        tab.locator(".nav-menu").get_by_role("link", name="Webhooks").click()
    else:
        tab.locator(".nav-wide").get_by_text("API", exact=True).click()
        tab.locator(".nav-wide").get_by_role("link", name="Webhooks").click()
    expect(tab.get_by_role("heading", name="Webhooks")).to_be_visible()


# The cards' actions not wholly on the screen, but for those folded in a confirmation.
ACTIONS_OFF_SCREEN = """() => [...document.querySelectorAll("main .actions :is(a, button, summary)")]
    .filter((action) => action.tagName === "SUMMARY" || !action.closest("details:not([open])"))
    .filter((action) => {
        const where = action.getBoundingClientRect();
        return !action.checkVisibility() || where.width === 0 || where.left < 0
            || where.right > document.documentElement.clientWidth + 0.5;
    })
    .map((action) => action.textContent.trim())"""


def fits(tab, where: str) -> None:
    assert tab.evaluate(MISFITS) == [], where
    assert tab.evaluate(ACTIONS_OFF_SCREEN) == [], where


def add_a_webhook_after_forgetting_its_events(tab, url: str) -> None:
    """The form sent with no event ticked: the error, with the focus on the events, and the URL kept; then sent whole."""
    form = tab.locator("#add-webhook")
    form.get_by_label("URL").fill(url)
    form.get_by_label("Description").fill("The CRM")
    form.get_by_role("button", name="Add webhook").click()
    expect(form.locator(".field-error")).to_have_text("This field is required.")
    expect(form.get_by_label("link.created")).to_be_focused()
    expect(form.get_by_role("group", name="Events")).to_have_attribute(
        "aria-describedby", "id_events_helptext id_events_error"
    )
    expect(form.get_by_label("link.created")).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_label("URL")).to_have_value(url)
    form.get_by_label("link.created").check()
    form.get_by_label("link.clicked").check()
    form.get_by_role("button", name="Add webhook").click()


def copy_the_secret(tab, receiver, url: str, viewport: str):
    """The secret shown once, given to the receiver; the new webhook's card, which fits the screen."""
    secret = tab.locator("#secret-value").text_content()
    assert secret.startswith("whsec_")
    expect(tab.locator("#webhook-secret")).to_contain_text("it is shown only now")
    receiver.secrets = [secret]
    card = tab.locator("article.webhook")
    expect(card.get_by_role("heading")).to_have_text(url)
    expect(card).to_contain_text("link.clicked")
    fits(tab, f"webhooks, {viewport}")
    tab.screenshot(path=SCREENSHOTS / f"webhooks-{viewport}.png", full_page=True)
    return secret, card


def send_a_test_event(tab, card, receiver):
    """A test event sent from the card and delivered, signed, by the deliverer: the receiver's delivery."""
    card.get_by_role("button", name="Send test event").click()
    expect(tab.get_by_text("is on its way")).to_be_visible()
    expect(tab.locator("#webhook-secret")).to_have_count(0)  # shown once
    call_command("deliver_webhooks", "--once")
    (delivery,) = receiver.got
    assert delivery.verified and delivery.event["type"] == "webhook.test"
    return delivery


def read_the_log_and_redeliver(tab, card, receiver, delivery, viewport: str) -> None:
    """The delivery in the card's log, then delivered again from there."""
    card.get_by_role("button", name="Delivery log").click()
    row = tab.locator("#deliveries tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("webhook.test")
    expect(row).to_contain_text(delivery.msg_id)
    expect(row).to_contain_text("HTTP 200")
    expect(row).to_contain_text("delivered")
    fits(tab, f"delivery log, {viewport}")
    tab.screenshot(path=SCREENSHOTS / f"webhook-deliveries-{viewport}.png", full_page=True)

    row.get_by_role("button", name="Redeliver").click()
    expect(tab.get_by_text("is sent again")).to_be_visible()
    call_command("deliver_webhooks", "--once")
    tab.reload()
    expect(tab.locator("#deliveries tbody tr")).to_have_count(2)
    assert receiver.ids() == [delivery.msg_id] * 2


def rotate_the_secret(tab, card, secret: str, viewport: str) -> None:
    """Back to the list, the secret rotated: a new one shown, the old one said to sign on beside it."""
    tab.get_by_role("link", name="All of the team's webhooks").click()
    card.get_by_text("Rotate secret…").click()
    card.get_by_role("button", name="Yes, rotate the secret").click()
    expect(tab.locator("#webhook-secret")).to_contain_text("keeps signing beside it for 24 hours")
    assert tab.locator("#secret-value").text_content() not in ("", secret)
    fits(tab, f"webhooks after a rotation, {viewport}")


def change_its_events(tab, card, url: str, viewport: str) -> None:
    """The change form, filled as the webhook is; its events and description changed and saved."""
    card.get_by_role("button", name="Change").click()
    change = tab.locator("#edit-webhook")
    expect(change.get_by_label("URL")).to_have_value(url)
    expect(change.get_by_label("link.clicked")).to_be_checked()
    fits(tab, f"a webhook's change, {viewport}")
    change.get_by_label("link.clicked").uncheck()
    change.get_by_label("link.deleted").check()
    change.get_by_label("Description").fill("The CRM, deletions too")
    change.get_by_role("button", name="Save").click()
    expect(tab.get_by_text("Saved the webhook")).to_be_visible()
    expect(card.locator(".events")).to_have_text("Events: link.created link.deleted")
    expect(card).to_contain_text("The CRM, deletions too")


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_an_admin_adds_a_webhook_tests_it_and_reads_its_delivery_log(
    browser,  # noqa: F811 (the fixture imported above)
    live_server,
    make_user,
    webhook_settings,
    receiver,
    viewport,
):
    admin = make_user()
    context, tab = sign_in(browser, live_server, admin, viewport=VIEWPORTS[viewport])
    refused = []
    tab.on("console", lambda message: "Content Security Policy" in message.text and refused.append(message.text))
    tab.on("pageerror", lambda error: refused.append(f"page error: {error}"))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    open_webhooks(tab, viewport)
    expect(tab.get_by_text("No webhooks yet.")).to_be_visible()

    url = f"{receiver.url}/{'crm-inbound-endpoint-for-every-campaign-' * 4}spring"
    add_a_webhook_after_forgetting_its_events(tab, url)
    secret, card = copy_the_secret(tab, receiver, url, viewport)
    delivery = send_a_test_event(tab, card, receiver)
    read_the_log_and_redeliver(tab, card, receiver, delivery, viewport)
    rotate_the_secret(tab, card, secret, viewport)
    change_its_events(tab, card, url, viewport)
    assert refused == []
    context.close()

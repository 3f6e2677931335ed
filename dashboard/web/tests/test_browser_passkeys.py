"""Two-factor in a real browser (Chromium, under the pages' real CSP, at a
desktop's and a phone's width): a passkey made on the Two-factor page with
Chromium's virtual authenticator (its DevTools WebAuthn domain), then used
to sign in on its own and as the second factor after a password; a browser
without it refused; and an authenticator app set up from the page's key,
its code then asked for after the password."""

import re
from base64 import b32decode

import pytest
from django_otp.oath import TOTP
from playwright.sync_api import expect

from accounts.models import Passkey
from testing.factories import PASSWORD

from .test_browser import SCREENSHOTS, browser  # noqa: F401 (the Chromium fixture)

pytestmark = pytest.mark.django_db(transaction=True)

VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def new_tab(browser, live_server, viewport: str, *, authenticator: bool = True):  # noqa: F811
    """A tab of a fresh browser profile, with a virtual platform
    authenticator (it verifies its user and holds discoverable keys)."""
    assert live_server.url.startswith("http://localhost:")  # a passkey's relying party is a host name, never an address
    context = browser.new_context(base_url=live_server.url, viewport=VIEWPORTS[viewport])
    context.set_default_timeout(15_000)
    tab = context.new_page()
    problems = []
    tab.on("console", lambda message: "Content Security Policy" in message.text and problems.append(message.text))
    tab.on("pageerror", lambda error: problems.append(str(error)))
    if authenticator:
        devtools = context.new_cdp_session(tab)
        devtools.send("WebAuthn.enable")
        devtools.send(
            "WebAuthn.addVirtualAuthenticator",
            {
                "options": {
                    "protocol": "ctap2",
                    "transport": "internal",
                    "hasResidentKey": True,
                    "hasUserVerification": True,
                    "isUserVerified": True,
                    "automaticPresenceSimulation": True,
                }
            },
        )
    return context, tab, problems


def sign_in_with_password(tab, username: str, *, next_: str = "/") -> None:
    tab.goto(f"/sign-in/?next={next_}")
    tab.get_by_label("Username").fill(username)
    tab.get_by_label("Password").fill(PASSWORD)
    tab.get_by_role("button", name="Sign in", exact=True).click()


def sign_out(tab) -> None:
    """Through the account's menu (the wide navigation's) or the phone's."""
    menu = tab.locator(".nav-wide .nav-account summary")
    (menu if menu.is_visible() else tab.locator(".nav-phone summary")).click()
    tab.locator("button:visible", has_text="Sign out").click()
    expect(tab).to_have_url(re.compile(r"/sign-in/"))


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_passkey_made_on_the_page_signs_in_alone_and_as_the_second_factor(
    browser,  # noqa: F811
    live_server,
    make_user,
    viewport,
):
    person = make_user()
    context, tab, problems = new_tab(browser, live_server, viewport)
    sign_in_with_password(tab, person.username)
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    tab.goto("/account/two-factor/")
    tab.get_by_label("Name of the new passkey").fill("test laptop")
    tab.get_by_role("button", name="Add a passkey").click()
    expect(tab.get_by_text("The passkey “test laptop” is added.")).to_be_visible()
    expect(tab.locator("#passkey-list")).to_contain_text("test laptop")
    tab.screenshot(path=SCREENSHOTS / f"two-factor-{viewport}.png", full_page=True)
    passkey = Passkey.objects.get(user=person)
    assert passkey.name == "test laptop" and passkey.last_used_at is None

    # On its own: no user name, no password.
    sign_out(tab)
    tab.goto("/sign-in/?next=/links/")
    tab.get_by_role("button", name="Use a passkey").click()
    expect(tab).to_have_url(re.compile(r"^http://localhost:\d+/links/$"))
    passkey.refresh_from_db()
    assert passkey.last_used_at is not None

    # After the password, which alone no longer signs in.
    sign_out(tab)
    sign_in_with_password(tab, person.username, next_="/tokens/")
    expect(tab).to_have_url(re.compile(r"^http://localhost:\d+/sign-in/second-factor/$"))
    expect(tab.get_by_role("heading", name="Your second factor")).to_be_visible()
    tab.screenshot(path=SCREENSHOTS / f"second-factor-{viewport}.png", full_page=True)
    tab.get_by_role("button", name="Use a passkey").click()
    expect(tab).to_have_url(re.compile(r"^http://localhost:\d+/tokens/$"))
    context.close()

    # Another browser holds no passkey of this site: nothing signs in.
    context, other, other_problems = new_tab(browser, live_server, viewport)
    other.goto("/sign-in/")
    other.get_by_role("button", name="Use a passkey").click()
    expect(other.locator("#passkey-status")).to_be_visible()
    expect(other).to_have_url(re.compile(r"^http://localhost:\d+/sign-in/$"))
    context.close()
    assert problems == [] and other_problems == [], problems + other_problems


def test_an_authenticator_app_set_up_in_the_browser_is_asked_for_after_the_password(
    browser,  # noqa: F811
    live_server,
    make_user,
):
    person = make_user()
    context, tab, problems = new_tab(browser, live_server, "phone", authenticator=False)
    sign_in_with_password(tab, person.username)
    tab.goto("/account/two-factor/")
    tab.get_by_role("button", name="Set up an app").click()
    expect(tab.locator(".totp-qr svg")).to_be_visible()
    key = b32decode(tab.locator("#totp-secret").inner_text().replace(" ", ""))
    tab.get_by_label("Code the app shows").fill(f"{TOTP(key).token():06d}")
    tab.get_by_role("button", name="Confirm").click()
    expect(tab.locator("#recovery-codes li")).to_have_count(10)
    codes = tab.locator("#recovery-codes code").all_inner_texts()

    sign_out(tab)
    sign_in_with_password(tab, person.username, next_="/links/")
    expect(tab).to_have_url(re.compile(r"^http://localhost:\d+/sign-in/second-factor/$"))
    tab.get_by_label(re.compile("The code your authenticator app shows")).fill(codes[0])
    tab.get_by_role("button", name="Go on").click()
    expect(tab).to_have_url(re.compile(r"^http://localhost:\d+/links/$"))
    expect(tab.get_by_text("You used a recovery code: 9 left.")).to_be_visible()
    context.close()
    assert problems == [], problems

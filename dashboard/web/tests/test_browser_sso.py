"""Signing in through a real OpenID provider in a real browser: panva's
certified oidc-provider (tests/oidc-provider, unmodified, with its own
login and consent pages) on loopback, Chromium through the whole flow
under the pages' real CSP, at a desktop's and a phone's width; and what
must be refused (the provider's no, a forged state, a replayed code, a code
made for another client), the provider down, and a local account with the
same verified e-mail, linked only by its password."""

import json
import os
import re
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from accounts import sso
from accounts.models import SsoIdentity
from devstack.net import free_port, wait_for_port
from slingshot.redis import get_redis
from testing.factories import PASSWORD, fresh

from .test_browser import SCREENSHOTS, browser  # noqa: F401 (the Chromium fixture)

pytestmark = pytest.mark.django_db(transaction=True)

PROVIDER_DIR = Path(__file__).resolve().parents[3] / "tests" / "oidc-provider"
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


class Provider:
    def __init__(self, root: Path, live_url: str):
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.accounts_file = root / "accounts.json"
        self.accounts: dict[str, dict] = {}
        self.save()
        self.secret = "test-" + os.urandom(16).hex()
        self.clients = [
            {
                "client_id": "slingshot",
                "client_secret": self.secret,
                "redirect_uris": [f"{live_url}/sign-in/sso/done"],
                "post_logout_redirect_uris": [f"{live_url}/sign-in/"],
            },
            {  # another application of the same provider
                "client_id": "other-app",
                "client_secret": "other-" + os.urandom(16).hex(),
                "redirect_uris": ["http://127.0.0.1:9/other-app/done"],
            },
        ]
        self.process = None

    def save(self) -> None:
        self.accounts_file.write_text(json.dumps(self.accounts))

    def add(self, login: str, **claims) -> None:
        self.accounts[login] = claims
        self.save()

    def start(self) -> None:
        env = {
            **os.environ,
            "PORT": str(self.port),
            "OIDC_ACCOUNTS": str(self.accounts_file),
            "OIDC_CLIENTS": json.dumps(self.clients),
            "OIDC_COOKIE_KEY": os.urandom(16).hex(),
        }
        self.process = subprocess.Popen(
            ["node", "provider.js"], cwd=PROVIDER_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for_port(self.port, process=self.process)

    def stop(self) -> None:
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def provider(live_server, tmp_path, settings):
    provider = Provider(tmp_path, live_server.url)
    provider.start()
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_CLIENT_ID = "slingshot"
    settings.OIDC_CLIENT_SECRET = provider.secret
    settings.OIDC_NAME = "Example SSO"
    settings.OIDC_SCOPES = "openid email profile groups"
    sso.forget_reachability()
    # Each test's browser is a visitor of its own to OIDC_THROTTLE_RATE (all
    # come from 127.0.0.1): two tests' sign-ins in one minute took the
    # second's check past it (a 429 at /sign-in/sso/done).
    redis = get_redis()
    for key in redis.scan_iter(match="slingshot:throttle:sso-*"):
        redis.delete(key)
    yield provider
    provider.stop()
    sso.forget_reachability()


def new_tab(browser, live_server, viewport="desktop"):  # noqa: F811
    context = browser.new_context(base_url=live_server.url, viewport=VIEWPORTS[viewport])
    context.set_default_timeout(15_000)
    tab = context.new_page()
    refused = []
    tab.on("console", lambda message: "Content Security Policy" in message.text and refused.append(message.text))
    return context, tab, refused


def wait_for(tab, seen: list, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not seen and time.monotonic() < deadline:
        tab.wait_for_timeout(50)
    assert seen, "the request never came"


def through_provider(tab, login: str, *, consent: bool = True) -> None:
    """The provider's own pages: its login form, then its consent."""
    tab.locator("input[name=login]").fill(login)
    tab.locator("input[name=password]").fill("any password: the provider's development pages take it")
    tab.locator("button[type=submit]").click()
    if consent:
        tab.locator("button[type=submit]").click()  # Continue
    else:
        tab.get_by_role("link", name=re.compile("Cancel", re.I)).click()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_person_signs_in_through_the_providers_pages_once_made_and_signs_out_of_both(
    browser,  # noqa: F811
    live_server,
    provider,
    viewport,
):
    provider.add(
        "alice", email="alice@example.org", email_verified=True, name="Alice Liddell", preferred_username="alice"
    )
    context, tab, refused = new_tab(browser, live_server, viewport)
    tab.goto("/links/")
    expect(tab).to_have_url(re.compile(r"/sign-in/"))
    button = tab.get_by_role("button", name="Sign in with Example SSO")
    expect(button).to_be_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=SCREENSHOTS / f"sign-in-sso-{viewport}.png", full_page=True)
    button.click()
    expect(tab).to_have_url(re.compile(re.escape(provider.issuer)))
    through_provider(tab, "alice")
    expect(tab).to_have_url(re.compile(r"/links/$"))  # where they were going

    (identity,) = SsoIdentity.objects.filter(issuer=provider.issuer)
    assert identity.subject == "alice" and identity.last_sign_in_at is not None
    person = identity.user
    assert (person.username, person.email, person.first_name, person.last_name) == (
        "alice",
        "alice@example.org",
        "Alice",
        "Liddell",
    )
    assert not person.has_usable_password()

    # Signing out ends the session here and, through the provider's end-session page, there.
    tab.goto("/")
    tab.locator(".nav-menu summary" if viewport == "phone" else ".nav-account summary").click()
    tab.locator("form[action='/sign-out/'] button:visible").first.click()
    expect(tab).to_have_url(re.compile(re.escape(provider.issuer)))
    tab.locator("button[type=submit]").first.click()  # the provider asks: sign out of it too? Yes
    expect(tab).to_have_url(re.compile(r"/sign-in/"))
    tab.goto("/links/")
    expect(tab).to_have_url(re.compile(r"/sign-in/"))

    # Again: the provider asks for the login again (its session ended too); the same person, not a new one.
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    through_provider(tab, "alice")
    expect(tab).to_have_url(re.compile(r"/links/$"))
    expect(tab.get_by_role("heading", name="Links")).to_be_visible()
    assert get_user_model().objects.filter(sso_identities__issuer=provider.issuer).count() == 1
    assert refused == []
    context.close()


def test_the_providers_no_signs_nobody_in(browser, live_server, provider):  # noqa: F811
    provider.add("bob", email="bob@example.org", email_verified=True)
    context, tab, _ = new_tab(browser, live_server)
    tab.goto("/sign-in/")
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    through_provider(tab, "bob", consent=False)
    expect(tab).to_have_url(re.compile(r"/sign-in/"))
    expect(tab.get_by_text("Example SSO did not let you in.")).to_be_visible()
    assert not SsoIdentity.objects.exists()
    tab.goto("/links/")
    expect(tab).to_have_url(re.compile(r"/sign-in/"))
    context.close()


def test_a_forged_state_a_replayed_code_and_another_clients_code_are_refused(
    browser,  # noqa: F811
    live_server,
    provider,
):
    provider.add("carol", email="carol@example.org", email_verified=True)
    context, tab, _ = new_tab(browser, live_server)
    # Forged: a state this session was never given.
    tab.goto("/sign-in/sso/done?code=made-up&state=forged")
    expect(tab.get_by_text("Signing in with Example SSO failed (mismatching_state): try again.")).to_be_visible()

    # Replayed: the callback that signed carol in, sent again from another session.
    answers = []
    tab.on("request", lambda request: "/sign-in/sso/done?" in request.url and answers.append(request.url))
    tab.goto("/sign-in/")
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    through_provider(tab, "carol")
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    (callback,) = answers
    other, replay, _ = new_tab(browser, live_server)
    replay.goto(callback)
    expect(replay.get_by_text("Signing in with Example SSO failed (mismatching_state): try again.")).to_be_visible()
    replay.goto("/links/")
    expect(replay).to_have_url(re.compile(r"/sign-in/"))

    # Another client's code, with a state this session holds: the provider refuses to exchange it.
    began = other.request.get(f"{live_server.url}/sign-in/sso/", max_redirects=0)  # the browser's cookies
    assert began.status == 302 and began.headers["location"].startswith(f"{provider.issuer}/auth?")
    state = parse_qs(urlparse(began.headers["location"]).query)["state"][0]
    theirs = []
    replay.on("request", lambda request: request.url.startswith("http://127.0.0.1:9/") and theirs.append(request.url))
    query = {
        "client_id": "other-app",
        "redirect_uri": "http://127.0.0.1:9/other-app/done",
        "response_type": "code",
        "scope": "openid",
        "state": "theirs",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
    }
    replay.goto(f"{provider.issuer}/auth?{urlencode(query)}")
    through_provider(replay, "carol")  # its consent then sends the code to the other app
    wait_for(replay, theirs)
    code = parse_qs(urlparse(theirs[0]).query)["code"][0]
    # A tab of the same session: the first one's failed way to the other app may still be landing.
    back = other.new_page()
    back.goto(f"/sign-in/sso/done?{urlencode({'code': code, 'state': state})}")
    expect(back.get_by_text("Signing in with Example SSO failed (invalid_grant): try again.")).to_be_visible()
    back.goto("/links/")
    expect(back).to_have_url(re.compile(r"/sign-in/"))
    assert SsoIdentity.objects.count() == 1  # carol's own sign-in alone
    other.close()
    context.close()


def test_while_the_provider_is_down_the_page_says_so_and_passwords_still_sign_in(
    browser,  # noqa: F811
    live_server,
    provider,
    make_user,
):
    person = make_user()
    provider.stop()
    context, tab, _ = new_tab(browser, live_server)
    tab.goto("/sign-in/")
    expect(tab.locator("#sso-unreachable")).to_have_text(
        "Example SSO cannot be reached right now; sign in with your password below."
    )
    expect(tab.get_by_role("button", name="Sign in with Example SSO")).to_be_disabled()
    tab.get_by_label("Username").fill(person.username)
    tab.get_by_label("Password").fill(PASSWORD)
    tab.get_by_role("button", name="Sign in", exact=True).click()
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    context.close()


def test_a_local_account_with_the_verified_email_is_linked_only_by_its_password(
    browser,  # noqa: F811
    live_server,
    provider,
    make_user,
):
    local = make_user(email="dana@example.org")
    provider.add("dana-at-idp", email="DANA@example.org", email_verified=True, preferred_username="dana")
    context, tab, refused = new_tab(browser, live_server, "phone")
    tab.goto("/sign-in/")
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    through_provider(tab, "dana-at-idp")
    expect(tab.get_by_role("heading", name="Link your account")).to_be_visible()
    expect(tab.locator("main")).to_contain_text(local.username)
    tab.get_by_label(f"Password of {local.username}").fill("not the password")
    tab.get_by_role("button", name="Link and sign in").click()
    expect(tab.get_by_role("alert")).to_contain_text("That is not the password of this account.")
    assert not SsoIdentity.objects.exists()
    tab.get_by_label(f"Password of {local.username}").fill(PASSWORD)
    tab.get_by_role("button", name="Link and sign in").click()
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    (identity,) = SsoIdentity.objects.all()
    assert (identity.user_id, identity.subject) == (local.pk, "dana-at-idp")
    assert get_user_model().objects.filter(email__iexact="dana@example.org").count() == 1
    assert refused == []
    context.close()


def test_an_unverified_email_makes_a_new_person_and_a_deactivated_one_is_refused(
    browser,  # noqa: F811
    live_server,
    provider,
    make_user,
):
    local = make_user(email="erin@example.org")
    provider.add("erin-at-idp", email="erin@example.org", email_verified=False, preferred_username=local.username)
    context, tab, _ = new_tab(browser, live_server)
    tab.goto("/sign-in/")
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    through_provider(tab, "erin-at-idp")
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    (identity,) = SsoIdentity.objects.all()
    assert identity.user_id != local.pk  # an e-mail the provider does not vouch for links nothing
    assert identity.user.username == f"{local.username}-2" and identity.user.email == ""
    context.close()

    get_user_model().objects.filter(pk=identity.user_id).update(is_active=False)
    context, tab, _ = new_tab(browser, live_server)
    tab.goto("/sign-in/")
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    through_provider(tab, "erin-at-idp")
    expect(tab.get_by_text("Your account here is deactivated: ask an admin.")).to_be_visible()
    tab.goto("/links/")
    expect(tab).to_have_url(re.compile(r"/sign-in/"))
    context.close()


def test_teams_and_roles_follow_the_providers_groups_at_each_sign_in(
    browser,  # noqa: F811
    live_server,
    provider,
    make_user,
    settings,
):
    from teams.groups import group_role_set
    from teams.models import Membership
    from teams.services import team_create

    engineering = fresh("Engineering ")
    settings.OIDC_GROUP_ROLES = [("eng", engineering, "editor")]
    admin = make_user()
    campaigns = team_create(actor=admin, name=fresh("Campaigns "))
    group_role_set(actor=admin, team=campaigns, group="mkt", role="viewer")
    provider.add("frank", email="frank@example.org", email_verified=True, groups=["eng", "mkt"])

    def sign_in_through_provider():
        context, tab, refused = new_tab(browser, live_server)
        tab.goto("/sign-in/")
        tab.get_by_role("button", name="Sign in with Example SSO").click()
        through_provider(tab, "frank")
        expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
        return context, tab, refused

    def teams_of_frank() -> dict[str, tuple[str, bool]]:
        person = SsoIdentity.objects.get(subject="frank").user
        return {
            m.team.name: (m.role, m.via_groups)
            for m in Membership.objects.filter(user=person, team__personal_for__isnull=True).select_related("team")
        }

    context, tab, refused = sign_in_through_provider()
    assert teams_of_frank() == {engineering: ("editor", True), campaigns.name: ("viewer", True)}
    tab.locator("#current-team").click()
    expect(tab.get_by_role("button", name=re.compile(re.escape(engineering)))).to_be_visible()
    assert refused == []
    context.close()

    # Out of eng at the provider: out of Engineering at the next sign-in; Campaigns kept.
    provider.add("frank", email="frank@example.org", email_verified=True, groups=["mkt"])
    context, tab, _ = sign_in_through_provider()
    assert teams_of_frank() == {campaigns.name: ("viewer", True)}
    context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_an_admin_maps_a_group_to_a_role_on_the_teams_page(
    browser,  # noqa: F811
    live_server,
    provider,
    make_user,
    viewport,
):
    from teams.services import team_create

    from .test_browser_tables import MISFITS
    from .test_browser_teams import sign_in

    admin = make_user()
    team = team_create(actor=admin, name=fresh("Support "))
    context, tab = sign_in(browser, live_server, admin, viewport=VIEWPORTS[viewport])
    tab.goto(f"/teams/{team.pk}/")
    section = tab.locator("#group-roles")
    expect(section.get_by_role("heading", name="Roles from the provider's groups")).to_be_visible()
    section.get_by_label("Group").fill("support-" + "tier-two-escalations-" * 3)
    section.get_by_label("Role").select_option("editor")
    section.get_by_role("button", name="Map group").click()
    expect(tab.get_by_text(re.compile("are editors here from their next sign-in"))).to_be_visible()
    expect(tab.locator("#group-role-list tbody tr")).to_have_count(1)
    expect(tab.locator("#members")).to_contain_text("by hand")  # the admin's own role, given when they made the team
    assert tab.evaluate(MISFITS) == [], viewport
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=SCREENSHOTS / f"team-groups-{viewport}.png", full_page=True)
    tab.get_by_role("button", name=re.compile("Remove the group")).click()
    expect(tab.locator("#group-role-list")).to_have_count(0)
    context.close()


def test_a_person_scim_provisioned_signs_in_as_that_person(
    browser,  # noqa: F811
    live_server,
    provider,
    make_user,
):
    from scim import services as scim_services
    from teams.groups import group_role_set
    from teams.models import Membership
    from teams.services import team_create

    admin = make_user()
    team = team_create(actor=admin, name=fresh("Sales "))
    group_role_set(actor=admin, team=team, group="sales", role="editor")
    schema = "urn:ietf:params:scim:schemas:core:2.0:User"
    person = scim_services.user_create({"schemas": [schema], "userName": "gwen", "externalId": "gwen-at-idp"})
    scim_services.group_create(
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
            "displayName": "sales",
            "members": [{"value": str(person.pk)}],
        }
    )
    provider.add("gwen-at-idp", email="gwen@example.org", email_verified=True, groups=[])  # groups by SCIM alone
    context, tab, _ = new_tab(browser, live_server)
    tab.goto("/sign-in/")
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    through_provider(tab, "gwen-at-idp")
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    assert SsoIdentity.objects.get(subject="gwen-at-idp").user_id == person.pk
    assert Membership.objects.get(team=team, user=person).role == "editor"  # kept: SCIM's groups count too
    context.close()


def _make_check_due(context) -> None:
    """Moves the session's last check with the provider an hour back, as if
    OIDC_RECHECK_MINUTES had passed since. First the first page's guess of
    the time zone (app.js posts it) has saved the session: a save after
    this one would put the check's time back."""
    from django.contrib.sessions.backends.db import SessionStore

    from web.middleware import SESSION_KEY as TIME_ZONE
    from web.sso_views import CHECKED

    (cookie,) = (c for c in context.cookies() if c["name"] == "sessionid")
    deadline = time.monotonic() + 15
    while not SessionStore(session_key=cookie["value"]).load().get(TIME_ZONE):
        assert time.monotonic() < deadline, "the page's time zone guess never reached the session"
        time.sleep(0.05)
    session = SessionStore(session_key=cookie["value"])
    session[CHECKED] = time.time() - 3600
    session.save()


def test_a_session_asks_the_provider_again_and_is_ended_or_its_person_deactivated(
    browser,  # noqa: F811
    live_server,
    provider,
    settings,
):
    from teams.groups import group_role_set
    from teams.models import Membership
    from teams.services import team_create
    from testing.factories import make_user
    from tokens.services import token_authenticate, token_create

    settings.OIDC_RECHECK_MINUTES = 15
    admin = make_user()
    campaigns = team_create(actor=admin, name=fresh("Campaigns "))
    group_role_set(actor=admin, team=campaigns, group="mkt", role="viewer")
    provider.add("grace", email="grace@example.org", email_verified=True, groups=["mkt"])
    context, tab, refused = new_tab(browser, live_server)
    asked = []
    tab.on("request", lambda request: request.url.startswith(provider.issuer + "/auth") and asked.append(request.url))
    tab.goto("/sign-in/")
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    through_provider(tab, "grace")
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    grace = SsoIdentity.objects.get(subject="grace").user
    assert Membership.objects.filter(user=grace, team=campaigns).exists()
    _, raw = token_create(user=grace, name="cli", scope="read")  # a token of theirs
    assert token_authenticate(raw) is not None

    # Not due: a page opens without the provider.
    asked.clear()
    tab.goto("/links/?page=1")
    expect(tab.get_by_role("heading", name="Links")).to_be_visible()
    assert asked == []

    # Due: the page goes by the provider (no page of its own: prompt=none) and back to itself,
    # the groups followed on the way.
    provider.add("grace", email="grace@example.org", email_verified=True, groups=[])
    _make_check_due(context)
    tab.goto("/links/?page=1")
    expect(tab).to_have_url(re.compile(r"^http://localhost:\d+/links/\?page=1$"))
    assert len(asked) == 1 and parse_qs(urlparse(asked[0]).query)["prompt"] == ["none"]
    assert not Membership.objects.filter(user=grace, team=campaigns).exists()

    # An error made up by someone else, with no state this session began, deactivates nobody.
    from django.contrib.sessions.backends.db import SessionStore

    from web.sso_views import CHECKING

    (cookie,) = (c for c in context.cookies() if c["name"] == "sessionid")
    session = SessionStore(session_key=cookie["value"])
    session[CHECKING] = "/links/"
    session.save()
    tab.goto("/sign-in/sso/done?error=access_denied&state=made-up")
    expect(tab).to_have_url(re.compile(r"/sign-in/"))
    grace.refresh_from_db()
    assert grace.is_active
    tab.goto("/sign-in/")
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()  # the provider's session still stands

    # Barred at the provider: at the next check, deactivated here, and their token refused.
    provider.add("grace", email="grace@example.org", email_verified=True, groups=[], disabled=True)
    _make_check_due(context)
    tab.goto("/links/")
    expect(tab).to_have_url(re.compile(r"/sign-in/"))
    expect(tab.get_by_text("Example SSO refused you: your account here is deactivated.")).to_be_visible()
    grace.refresh_from_db()
    assert not grace.is_active
    assert token_authenticate(raw) is None
    assert refused == []
    context.close()


def test_a_session_whose_provider_session_ended_is_signed_out_but_kept_active(
    browser,  # noqa: F811
    live_server,
    provider,
    settings,
):
    settings.OIDC_RECHECK_MINUTES = 15
    provider.add("heidi", email="heidi@example.org", email_verified=True)
    context, tab, _ = new_tab(browser, live_server)
    tab.goto("/sign-in/")
    tab.get_by_role("button", name="Sign in with Example SSO").click()
    through_provider(tab, "heidi")
    expect(tab.get_by_role("heading", name="Overview")).to_be_visible()
    # The provider forgets its session (its cookies gone): it cannot answer without a page.
    context.clear_cookies(domain="127.0.0.1")
    _make_check_due(context)
    tab.goto("/links/")
    expect(tab).to_have_url(re.compile(r"/sign-in/"))
    expect(tab.get_by_text("Your session at Example SSO has ended: sign in again.")).to_be_visible()
    heidi = SsoIdentity.objects.get(subject="heidi").user
    heidi.refresh_from_db()
    assert heidi.is_active
    context.close()

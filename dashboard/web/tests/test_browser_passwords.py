"""Passwords in a real browser (Playwright driving Debian's headless
Chromium, under the pages' real CSP), at a desktop's and a phone's width:
a visitor of a link with a password meets the edge's password page on the
short link's own host, and lands where the link sends them, the hour's
accounting exact; and a password typed in the link form is never dropped
when the form comes back with an error. The link's target is a local
server that Chromium reaches by a public-looking name (--host-resolver-rules)."""

import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth.hashers import check_password
from django.core.management import call_command
from django.db import connection
from playwright.sync_api import expect, sync_playwright

from clicks import accounting
from clicks.models import Click
from devstack.net import free_port
from links.models import Link
from slingshot.redis import get_redis
from testing.accounting import forget_the_accounting
from testing.factories import fresh, make_link

from .test_browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS
from .test_browser_teams import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

TARGET_HOST = "target.example"
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


class Target(BaseHTTPRequestHandler):
    """The sites around the short link: a page that links to it, and the
    link's target, which shows what it was asked."""

    seen: list[tuple[str, str, dict]] = []
    link_to = ""

    def do_GET(self):
        Target.seen.append(("GET", self.path, dict(self.headers)))
        if self.path == "/news":
            body = f'<!doctype html><title>News</title><a id="go" href="{Target.link_to}">Read more</a>'
        else:
            body = f"<!doctype html><title>Arrived</title><h1>Arrived</h1><p id='path'>{self.path}</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self):  # never: the password must not travel on to the target
        Target.seen.append(("POST", self.path, dict(self.headers)))
        self.send_response(405)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def target():
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Target)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture(scope="module")
def browser(target):
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {TARGET_HOST} 127.0.0.1:{target}"],
        )
        yield chromium
        chromium.close()


def import_all() -> None:
    call_command("import_clicks", "--once", "--consumer", "browser-passwords")


def this_hour() -> accounting.HourAccount:
    now = datetime.now(timezone.utc)
    return accounting.accounts(client=get_redis(), start=now, end=now, now=now)[0]


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_visitor_types_the_password_and_lands_where_the_link_sends_them(
    browser, target, live_server, make_edge, make_user, viewport
):
    now = datetime.now(timezone.utc)
    if now.minute == 59 and now.second >= 30:  # the test reads one hour's accounting: not across its end
        time.sleep(61 - now.second)
    # An edge of the test's own, whose journals have counted nothing yet: an
    # edge sends its hour counts as they stand, so a shared one would send
    # again, with this test's visit, all it counted in the hour.
    port = live_server.url.rsplit(":", 1)[1]
    password_edge = make_edge(env={"EDGE_DASHBOARD_URL": f"http://127.0.0.1:{port}"})
    forget_the_accounting("browser-passwords")
    owner = make_user()
    link = make_link(
        owner=owner,
        url=f"http://{TARGET_HOST}/landing",
        slug=fresh("pw"),
        password="open sesame",
        redirect_status=307,
        forward_query=True,
        rules=[{"url": f"http://{TARGET_HOST}/nl", "conditions": [{"type": "query", "key": "lang", "value": "nl"}]}],
    )
    Target.link_to = f"{password_edge.url}/{link.slug}?lang=nl&utm_source=mail"
    Target.seen.clear()
    context = browser.new_context(viewport=VIEWPORTS[viewport])
    context.set_default_timeout(15_000)
    tab = context.new_page()
    console = []
    tab.on("console", lambda message: console.append(message.text))
    tab.goto(f"http://{TARGET_HOST}/news")
    tab.locator("#go").click()

    expect(tab.get_by_role("heading", name="This link needs a password")).to_be_visible()
    assert tab.url == Target.link_to  # the short link's own host: no dashboard in sight
    tab.get_by_label("Password").fill("open sesame?")
    tab.get_by_role("button", name="Continue").click()
    expect(tab.get_by_role("alert")).to_have_text("That is not the password.")
    assert tab.url == Target.link_to
    assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=SCREENSHOTS / f"password-page-{viewport}.png", full_page=True)

    tab.get_by_label("Password").fill("open sesame")
    tab.get_by_role("button", name="Continue").click()
    expect(tab.get_by_role("heading", name="Arrived")).to_be_visible()
    # The rule for lang=nl, the visitor's query forwarded.
    assert tab.url == f"http://{TARGET_HOST}/nl?lang=nl&utm_source=mail"
    assert [(method, path) for method, path, _ in Target.seen if path != "/favicon.ico"] == [
        ("GET", "/news"),
        ("GET", "/nl?lang=nl&utm_source=mail"),
    ]
    assert not [text for text in console if "Content Security Policy" in text or "Refused" in text], console
    context.close()

    # One click, with where the visitor came from before the password page
    # (the news page's origin, as Chromium sends it across sites); the two
    # views of the password page are orphan visits; served == stored.
    deadline = time.monotonic() + 15
    while (hour := this_hour()).stored < 3 or hour.served < 3:
        assert time.monotonic() < deadline, hour
        import_all()
        time.sleep(0.05)
    (click,) = Click.objects.filter(link=link)
    assert (click.referer, click.rule) == (f"http://{TARGET_HOST}/", "1")
    with connection.cursor() as cursor:
        cursor.execute("SELECT kind, referer FROM orphan_visits WHERE slug = %s ORDER BY occurred_at", [link.slug])
        assert cursor.fetchall() == [("password", f"http://{TARGET_HOST}/")] * 2
    time.sleep(0.3)  # anything more the edge counted would show now
    import_all()
    hour = this_hour()
    assert (hour.served_redirects, hour.served_orphans, hour.stored_clicks, hour.stored_orphans) == (1, 2, 1, 2)
    assert hour.difference == 0


def test_a_visitor_whose_browser_speaks_german_is_asked_in_german_on_a_phone(browser, password_edge, make_user):
    """The page and its answers in the language of Chromium's locale (its
    Accept-Language), the longer words at a phone's width."""
    link = make_link(owner=make_user(), url=f"http://{TARGET_HOST}/landing", slug=fresh("de"), password="offen")
    context = browser.new_context(viewport=VIEWPORTS["phone"], locale="de-DE")
    context.set_default_timeout(15_000)
    tab = context.new_page()
    console = []
    tab.on("console", lambda message: console.append(message.text))
    tab.goto(f"{password_edge.url}/{link.slug}")
    expect(tab.get_by_role("heading", name="Für diesen Link ist ein Passwort nötig")).to_be_visible()
    assert tab.evaluate("document.documentElement.lang") == "de"
    tab.get_by_label("Passwort").fill("zu")
    tab.get_by_role("button", name="Weiter").click()
    expect(tab.get_by_role("alert")).to_have_text("Das ist nicht das Passwort.")
    assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=SCREENSHOTS / "password-page-de-phone.png", full_page=True)
    tab.get_by_label("Passwort").fill("offen")
    tab.get_by_role("button", name="Weiter").click()
    expect(tab.get_by_role("heading", name="Arrived")).to_be_visible()
    assert not [text for text in console if "Content Security Policy" in text or "Refused" in text], console
    context.close()


NOT_KEPT = "Type the password again: it is not kept when the form comes back with an error"


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_password_typed_in_a_form_that_comes_back_is_never_dropped(browser, live_server, make_user, viewport):
    owner = make_user()
    taken = make_link(owner=owner, url="https://example.com/taken", slug=fresh("tk"))
    context, tab = sign_in(browser, live_server, owner, VIEWPORTS[viewport])
    slug = fresh("nw")

    tab.goto("/links/new/")
    tab.get_by_label("Target URL").fill("https://example.com/secret")
    tab.get_by_label("Slug").fill(taken.slug)
    tab.locator("#id_password").fill("first secret")
    tab.get_by_role("button", name="Save").click()
    expect(tab.locator("#id_slug_error")).to_have_text("Link with this Slug already exists.")
    password = tab.locator("#id_password")
    expect(password).to_have_value("")  # a browser never gets a password back...
    expect(tab.locator("#id_password_error")).to_contain_text(NOT_KEPT)  # ...and the form says so
    tab.screenshot(path=SCREENSHOTS / f"link-form-password-{viewport}.png", full_page=True)
    tab.get_by_label("Slug").fill(slug)
    tab.get_by_role("button", name="Save").click()  # without typing it again: refused
    expect(tab.locator("#id_password_error")).to_contain_text(NOT_KEPT)
    assert not Link.objects.filter(slug=slug).exists()
    tab.locator("#id_password").fill("first secret")
    tab.get_by_role("button", name="Save").click()
    expect(tab.get_by_role("heading", name=slug)).to_be_visible()
    assert check_password("first secret", Link.objects.get(slug=slug).password)

    tab.goto(f"/links/{slug}/edit/")
    tab.get_by_label("Target URL").fill("ftp://example.com/nope")
    tab.locator("#id_password").fill("second secret")
    tab.get_by_role("button", name="Save").click()
    expect(tab.locator("#id_password_error")).to_contain_text(NOT_KEPT)
    tab.get_by_label("Target URL").fill("https://example.com/secret2")
    tab.get_by_role("button", name="Save").click()  # the old password is not kept in the new one's place
    expect(tab.locator("#id_password_error")).to_contain_text(NOT_KEPT)
    assert check_password("first secret", Link.objects.get(slug=slug).password)
    tab.locator("#id_password").fill("second secret")
    tab.get_by_role("button", name="Save").click()
    expect(tab.get_by_text("Saved.")).to_be_visible()
    saved = Link.objects.get(slug=slug)
    assert saved.url == "https://example.com/secret2" and check_password("second secret", saved.password)
    context.close()

"""An abuse report in a real browser (Playwright driving Debian's headless
Chromium, under the pages' real CSP), at a desktop's and a phone's width:
a visitor on a short domain follows the 404 page's link to the report
page and reports a short URL; a staff member finds it in the dashboard's
queue and stops the link; the edge answers 451 with their words within 2 s;
the hour's accounting exact. The short domain is a public-looking name
Chromium reaches through --host-resolver-rules."""

import time
from datetime import datetime, timezone

import pytest
import requests
from django.core.management import call_command
from playwright.sync_api import expect, sync_playwright

from clicks import accounting
from links.domains import domain_create, domain_delete
from links.services import link_delete
from moderation.models import Report
from slingshot.redis import get_redis
from testing.accounting import forget_the_accounting
from testing.factories import fresh, make_link
from web.tests.test_browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS
from web.tests.test_browser_teams import sign_in

pytestmark = pytest.mark.django_db(transaction=True)

VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def report_edge(live_server, make_edge):
    port = live_server.url.rsplit(":", 1)[1]
    return make_edge(env={"EDGE_DASHBOARD_URL": f"http://127.0.0.1:{port}"})


@pytest.fixture
def short_domain():
    domain = domain_create(host=f"{fresh('s')}.example")
    yield domain
    for link in domain.links.all():
        link_delete(link=link)
    domain_delete(domain=domain)


def this_hour() -> accounting.HourAccount:
    now = datetime.now(timezone.utc)
    return accounting.accounts(client=get_redis(), start=now, end=now, now=now)[0]


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_report_sent_from_a_short_domain_is_acted_on_and_the_edge_answers_451(
    live_server, report_edge, short_domain, make_user, viewport
):
    now = datetime.now(timezone.utc)
    if now.minute == 59 and now.second >= 30:  # the test reads one hour's accounting: not across its end
        time.sleep(61 - now.second)
    forget_the_accounting("browser-reports")
    host = short_domain.host
    link = make_link(owner=make_user(), url="https://example.com/free-gift", slug=fresh("r"), domain=short_domain)
    staff = make_user(is_staff=True)
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        edge_port = report_edge.url.rsplit(":", 1)[1]
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {host} 127.0.0.1:{edge_port}"]
        )
        visitor = browser.new_context(viewport=VIEWPORTS[viewport])
        visitor.set_default_timeout(15_000)
        tab = visitor.new_page()
        console = []
        tab.on("console", lambda message: console.append(message.text))
        tab.goto(f"http://{host}/no-such-{link.slug}")
        expect(tab.get_by_role("heading", name="Link not found")).to_be_visible()
        tab.get_by_role("link", name="Report a link").click()
        expect(tab.get_by_role("heading", name="Report a link")).to_be_visible()
        assert tab.url == f"http://{host}/report"  # the short domain's own page: no dashboard in sight
        tab.get_by_label("Short URL").fill(f"http://{host}/{link.slug}")
        tab.get_by_label("What is wrong with it").select_option("phishing")
        tab.get_by_label("Details (optional)").fill("It asks for card numbers.")
        assert tab.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=SCREENSHOTS / f"report-page-{viewport}.png", full_page=True)
        tab.get_by_role("button", name="Send the report").click()
        expect(tab.get_by_role("status")).to_contain_text("Your report was sent")
        assert not [text for text in console if "Content Security Policy" in text or "Refused" in text], console
        report = Report.objects.get(link=link)
        assert (report.reason, report.details) == ("phishing", "It asks for card numbers.")

        context, dashboard = sign_in(browser, live_server, staff, viewport=VIEWPORTS[viewport])
        dashboard.goto("/moderation/")
        card = dashboard.locator(f"#report-{report.pk}")
        expect(card).to_contain_text("It asks for card numbers.")
        expect(card).to_contain_text("https://example.com/free-gift")
        card.get_by_label("Words of the 451 page").fill("Stopped: this link was used for phishing.")
        assert dashboard.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        dashboard.screenshot(path=SCREENSHOTS / f"moderation-queue-{viewport}.png", full_page=True)
        card.get_by_role("button", name="Stop the link").click()
        acted = time.monotonic()
        expect(dashboard.get_by_text(f"Stopped {link.short_url}: it answers 451.")).to_be_visible()

        def status() -> int:
            return requests.get(
                f"{report_edge.url}/{link.slug}", headers={"Host": host}, allow_redirects=False, timeout=5
            ).status_code

        while status() != 451:
            assert time.monotonic() - acted < 2.0, "the edge still serves the link 2 s after it was stopped"
            time.sleep(0.05)
        tab.goto(f"http://{host}/{link.slug}")
        expect(tab.get_by_role("heading", name="Link disabled")).to_be_visible()
        expect(tab.get_by_text("Stopped: this link was used for phishing.")).to_be_visible()
        assert not [text for text in console if "Content Security Policy" in text or "Refused" in text], console
        context.close()
        visitor.close()
        browser.close()

    # The 404, the 451 seen by the poll and by the visitor: orphan visits,
    # served == stored.
    deadline = time.monotonic() + 15
    while (hour := this_hour()).stored < hour.served or hour.served < 3:
        assert time.monotonic() < deadline, hour
        call_command("import_clicks", "--once", "--consumer", "browser-reports")
        time.sleep(0.05)
    time.sleep(0.3)
    call_command("import_clicks", "--once", "--consumer", "browser-reports")
    assert this_hour().difference == 0

"""A click pushed to an open link page in a real browser: Chromium through
the dashboard's real front (dashboard/nginx.conf, rendered as `make run`
renders it) in front of Django and serve_live; the importer stores a
click, and the page shows it within a second, told by its event stream,
not by its polling."""

import subprocess
import threading
import time

import pytest
from playwright.sync_api import expect

from devstack.dashboard import render_front_conf
from devstack.net import free_port, wait_for_port
from devstack.nginx import nginx_command
from testing.factories import make_link

from .test_browser import browser  # noqa: F401 (the Chromium fixture)
from .test_browser_teams import sign_in
from .test_live import store_click

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def front(live_server, tmp_path):
    """The front on a port of its own, passing pages to the test's Django and /live/events to serve_live."""
    from web.live_server import serve

    live_port = free_port()
    stopping = threading.Event()
    server = threading.Thread(target=serve, args=("127.0.0.1", live_port, stopping), daemon=True)
    server.start()
    wait_for_port(live_port)
    port = free_port()
    django_port = int(live_server.url.rsplit(":", 1)[1])
    render_front_conf(tmp_path / "front", port, gunicorn_port=django_port, live_port=live_port)
    nginx = subprocess.Popen(nginx_command(tmp_path / "front"), stderr=subprocess.DEVNULL)
    wait_for_port(port, process=nginx)
    time.sleep(0.3)  # serve_live's Redis listener subscribed

    class Front:
        url = f"http://127.0.0.1:{port}"

    yield Front
    nginx.terminate()
    nginx.wait(timeout=10)
    stopping.set()
    server.join(timeout=5)


# Notes in window.shownAt (ms since the epoch) when the page first shows
# one click: its live part at version 1 with an all-time count of 1.
SHOWN_AT = """() => {
    const shown = () =>
        document.querySelector("[data-live-version]")?.dataset.liveVersion === "1" &&
        document.querySelector("#all-time-clicks")?.textContent.trim() === "1";
    window.shownAt = null;
    new MutationObserver((_, observer) => {
        if (shown()) {
            window.shownAt = Date.now();
            observer.disconnect();
        }
    }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
}"""


def test_a_click_shows_on_the_open_link_page_within_a_second(browser, front, user):  # noqa: F811
    link = make_link(owner=user, url="https://example.org/launch")
    context, tab = sign_in(browser, front, user)
    polls, streams, fetches = [], [], []
    tab.on("request", lambda request: polls.append(time.time()) if request.url.endswith("/live") else None)
    tab.on("request", lambda request: fetches.append(request.url) if "/report" in request.url else None)
    tab.on("response", lambda response: streams.append((response.url, response.status)))
    tab.goto(f"/links/{link.slug}/")
    version = tab.locator("[data-live-version]").first
    expect(version).to_have_attribute("data-live-version", "0")
    # The link page's own stream: the overview, where sign-in landed, opened
    # one of its own, whose answer may come after this page has loaded.
    events = tab.locator("[data-live-events]").first.get_attribute("data-live-events")

    def page_streams() -> list[int]:
        return [status for url, status in streams if url.endswith(events)]

    deadline = time.monotonic() + 5
    while not page_streams() and time.monotonic() < deadline:
        tab.wait_for_timeout(50)
    assert page_streams() == [200], streams
    tab.wait_for_timeout(300)
    expect(tab.locator("#recent-clicks")).to_contain_text("No clicks in this range.")

    # When the page showed the click, by its own clock: expect() looks at
    # growing intervals (100, 250, 500 ms...), which timing it would count.
    tab.evaluate(SHOWN_AT)
    store_click(link)
    stored = time.time()  # committed
    expect(version).to_have_attribute("data-live-version", "1", timeout=5000)
    expect(tab.locator("#all-time-clicks")).to_have_text("1", timeout=5000)
    waited = time.time()  # the page's requests till now were seen by now
    shown_at = tab.evaluate("() => window.shownAt")
    assert shown_at is not None, "the page showed the click with no change to its document"
    shown = shown_at / 1000
    print(f"shown {shown - stored:.3f} s after it was stored")
    assert shown - stored < 1.0, f"shown {shown - stored:.3f} s after it was stored"
    assert not [at for at in polls if stored <= at <= waited], "the page polled: it should have been told"
    # The report follows, made by serve_live and pushed: the page fetches nothing.
    expect(tab.locator("#recent-clicks tbody")).to_contain_text("pytest", timeout=3000)  # the click's agent
    assert not fetches, fetches
    context.close()


def test_the_front_takes_at_most_a_hundred_streams_from_one_address(front, user):
    from web import live

    from .test_live import Stream

    link = make_link(owner=user, url="https://example.org/")
    url = live.events_url(live.link_channels(link))
    port = int(front.url.rsplit(":", 1)[1])
    streams = [Stream(port, url) for _ in range(100)]
    try:
        assert {stream.status for stream in streams} == {200}
        refused = Stream(port, url)
        assert refused.status == 429
        refused.close()
    finally:
        for stream in streams:
            stream.close()

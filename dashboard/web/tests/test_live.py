"""Clicks pushed to the pages that show them: the token a page gets, and
serve_live end to end against the real Redis and the click importer's own
commits."""

import socket
import threading
import time
import uuid
from datetime import UTC, datetime

import orjson
import pytest
from django.core import signing

from teams.models import Membership, Role, Team
from testing.factories import fresh, make_link, make_user
from testing.streams import entry, importer
from web import live, live_server
from web.live_server import serve

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stopping = threading.Event()
    thread = threading.Thread(target=serve, args=("127.0.0.1", port, stopping), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "serve_live did not start"
            time.sleep(0.05)
    time.sleep(0.3)  # its Redis listener subscribed
    yield port
    stopping.set()
    thread.join(timeout=5)


class Stream:
    """An open /live/events, read as a browser's EventSource reads it."""

    def __init__(self, port: int, url: str):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.buffer = b""
        self.status = int(self._until(b"\r\n\r\n", 5).split(b" ", 2)[1])

    def _until(self, marker: bytes, seconds: float) -> bytes:
        deadline = time.monotonic() + seconds
        while marker not in self.buffer:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return b""
            if not data:
                return b""
            self.buffer += data
        head, _, self.buffer = self.buffer.partition(marker)
        return head

    def event_within(self, name: str, seconds: float) -> bytes | None:
        """The data of the next event `name` within `seconds`, or None."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            event = self._until(b"\n\n", left)
            if f"event: {name}\n".encode() in event:
                self.last = event
                return event.split(b"\ndata: ", 1)[1]
        return None

    def clicks_within(self, seconds: float) -> bool:
        return self.event_within("clicks", seconds) is not None

    def ended_within(self, seconds: float) -> bool:
        """Whether the server closed the stream within `seconds`."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return False
            if not data or data.endswith(b"0\r\n\r\n"):  # closed, or its chunked body's end
                return True
        return False

    def close(self):
        self.sock.close()


def store_click(link) -> None:
    store = importer("live-" + uuid.uuid4().hex[:6])
    now = int(datetime.now(UTC).timestamp() * 1000)
    click = {"ts": now, "slug": link.slug, "link": link.pk, "ip": "198.51.100.9", "ua": "pytest", "ref": ""}
    assert store.store(store.maker.make([entry([click])])) == 1


def test_a_link_page_is_told_of_its_clicks_within_a_second_and_no_other_is(server):
    owner = make_user()
    link, other = make_link(owner=owner, url="https://example.org/"), make_link(owner=owner, url="https://example.org/")
    mine = Stream(server, live.events_url(live.link_channels(link)))
    theirs = Stream(server, live.events_url(live.link_channels(other)))
    try:
        assert mine.status == 200 and theirs.status == 200
        started = time.monotonic()
        store_click(link)
        assert mine.clicks_within(1.0), "no event within a second of the commit"
        assert b'data: {"clicks":1,"human":1}' in mine.last  # the counts the page shows at once
        assert time.monotonic() - started < 1.5
        assert not theirs.clicks_within(0.5)
    finally:
        mine.close()
        theirs.close()


def test_the_overview_hears_its_teams_and_only_them_while_a_member(server):
    owner, stranger = make_user(), make_user()
    team = Team.objects.create(name=fresh("team-"))
    Membership.objects.create(team=team, user=owner, role=Role.VIEWER)
    link = make_link(owner=stranger, url="https://example.org/")  # the stranger's personal team
    shared = make_link(owner=make_user(is_superuser=True), team=team, url="https://example.org/")
    overview = Stream(server, live.events_url(live.overview_channels(owner)))
    try:
        store_click(link)
        assert not overview.clicks_within(0.5)
        store_click(shared)
        assert overview.clicks_within(1.0)
        Membership.objects.filter(team=team, user=owner).delete()
        store_click(shared)
        assert not overview.clicks_within(1.5)  # at once, not when the stream ends
    finally:
        overview.close()


@pytest.mark.parametrize("token", ["", "nonsense", "tampered"])
def test_a_token_not_ours_opens_nothing(server, token):
    if token == "tampered":
        good = live.events_url(["link:1"]).split("t=", 1)[1]
        token = good[:-2] + ("AA" if not good.endswith("AA") else "BB")
    stream = Stream(server, "/live/events?t=" + token)
    try:
        assert stream.status == 403
    finally:
        stream.close()


def test_an_old_token_opens_nothing(settings):
    token = live.events_url(["link:1"]).split("t=", 1)[1]
    assert live.subscription_of(token) == live.Subscription(["link:1"])
    signer = signing.TimestampSigner(salt=live.TOKEN_SALT)
    old = signer.sign_object({"c": ["link:1"]}, compress=True)
    assert live.subscription_of(old).channels == ["link:1"]
    before = signer.sign_object(["link:1"], compress=True)  # the release before's: channels alone
    assert live.subscription_of(before) == live.Subscription(["link:1"])
    import time as clock

    real = clock.time
    try:
        clock.time = lambda: real() + live.TOKEN_MAX_AGE + 5
        assert live.subscription_of(old) is None
    finally:
        clock.time = real


def test_the_pages_carry_their_events_url_and_polling_hands_out_a_fresh_one(client):
    owner = make_user()
    link = make_link(owner=owner, url="https://example.org/")
    client.force_login(owner)
    page = client.get(f"/links/{link.slug}/").content.decode()
    assert 'data-live-events="/live/events?t=' in page
    answer = client.get(f"/links/{link.slug}/live?range=7d").json()
    named = live.subscription_of(answer["events"].split("t=", 1)[1])
    assert named.channels == [f"link:{link.pk}"] and named.user == owner.pk
    assert named.part == {"view": "link", "slug": link.slug, "query": "range=7d", "zone": "UTC"}
    overview = client.get("/live").json()
    named = live.subscription_of(overview["events"].split("t=", 1)[1])
    assert named.channels == [f"user:{owner.pk}"] and named.part == {"view": "overview", "for": owner.pk, "zone": "UTC"}
    assert client.get("/live/events").status_code == 503  # gunicorn serves none: the page polls


def test_a_busy_channel_wakes_its_pages_at_most_once_a_second():
    import asyncio

    from web.live_server import WAKE_GAP, Hub, Page

    async def run() -> list[float]:
        loop = asyncio.get_running_loop()
        hub, page, woken = Hub(loop), Page(live.Subscription(["link:1"])), []
        hub.add(page)
        hub.wake("link:1")
        assert page.ready.is_set()  # the first batch's: at once, before anything awaits
        page.ready.clear()
        page.waiting.clear()
        first = loop.time()
        for _ in range(19):  # nineteen more batches in about 0.2 s
            hub.wake("link:1")
            await asyncio.sleep(0.01)
        while loop.time() - first < WAKE_GAP * 2.5:
            try:
                await asyncio.wait_for(page.ready.wait(), timeout=0.05)
                page.ready.clear()
                page.waiting.clear()
                woken.append(loop.time() - first)
            except TimeoutError:
                pass
        return woken

    woken = asyncio.run(run())
    # The batches after the first: one wake-up for all of them, once the gap is over.
    assert len(woken) == 1, woken
    assert WAKE_GAP - 0.05 <= woken[0] < WAKE_GAP + 0.3


def test_a_links_live_parts_are_made_once_for_its_readers_and_again_when_its_clicks_change(client):
    from django.db import connection as db
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    owner, reader, stranger = make_user(), make_user(), make_user()
    team = Team.objects.create(name=fresh("team-"))
    Membership.objects.create(team=team, user=owner, role=Role.ADMIN)
    Membership.objects.create(team=team, user=reader, role=Role.VIEWER)
    link = make_link(owner=owner, team=team, url="https://example.org/")
    url = f"/links/{link.slug}/report"
    first, second, third = Client(), Client(), Client()
    first.force_login(owner)
    second.force_login(reader)
    third.force_login(stranger)
    made = first.get(url)
    assert made.status_code == 200 and 'data-live-version="0"' in made.content.decode()
    with CaptureQueriesContext(db) as queries:
        again = second.get(url)
    assert again.content == made.content
    assert len(queries) <= 6, [q["sql"] for q in queries]  # the session, the link, its count: not the report's 13
    assert third.get(url).status_code == 404  # no reader: nothing, cached or not
    store_click(link)
    assert 'data-live-version="1"' in second.get(url).content.decode()


def _part_url(link, user) -> str:
    part = {"view": "link", "slug": link.slug, "query": "", "zone": "UTC"}
    return live.events_url(live.link_channels(link), part, user)


def test_a_links_pages_are_pushed_its_part_made_once_for_all_its_readers(server, monkeypatch):
    from web import live_parts

    made = []
    real = live_parts.make
    monkeypatch.setattr(live_parts, "make", lambda part, user: made.append(user) or real(part, user))
    owner, reader = make_user(), make_user()
    team = Team.objects.create(name=fresh("team-"))
    Membership.objects.create(team=team, user=owner, role=Role.ADMIN)
    Membership.objects.create(team=team, user=reader, role=Role.VIEWER)
    link = make_link(owner=owner, team=team, url="https://example.org/")
    pages = [Stream(server, _part_url(link, person)) for person in (owner, reader, reader)]
    try:
        for page in pages:
            assert page.event_within("hello", 1.0) == b'{"parts":true}'
        store_click(link)
        parts = [page.event_within("part", 3.0) for page in pages]
        assert parts[0] is not None and parts[0] == parts[1] == parts[2]
        html = orjson.loads(parts[0])["html"]
        assert 'data-live-version="1"' in html and 'id="report"' in html
        assert len(made) == 1 and made[0] in (owner.pk, reader.pk)
        time.sleep(live_server.PART_GAP)
        store_click(link)
        assert 'data-live-version="2"' in orjson.loads(pages[2].event_within("part", 3.0))["html"]
        assert len(made) == 2
    finally:
        for page in pages:
            page.close()


def test_a_page_whose_person_lost_the_link_is_ended_when_its_part_is_made(server):
    owner, reader = make_user(), make_user()
    team = Team.objects.create(name=fresh("team-"))
    Membership.objects.create(team=team, user=owner, role=Role.ADMIN)
    Membership.objects.create(team=team, user=reader, role=Role.VIEWER)
    link = make_link(owner=owner, team=team, url="https://example.org/")
    page = Stream(server, _part_url(link, reader))
    try:
        assert page.event_within("hello", 1.0)
        Membership.objects.filter(team=team, user=reader).delete()
        store_click(link)
        assert page.ended_within(3.0), "the stream of a person out of the team went on"
    finally:
        page.close()


def test_the_overview_is_pushed_its_persons_own_figures(server):
    owner = make_user()
    link = make_link(owner=owner, url="https://example.org/")
    request = type("Request", (), {"user": owner})()
    overview = Stream(server, live.events_url(live.overview_channels(owner), live.overview_part(request), owner))
    try:
        store_click(link)
        part = overview.event_within("part", 3.0)
        assert part is not None and 'data-live-version="1"' in orjson.loads(part)["html"]
    finally:
        overview.close()


def test_a_stream_of_the_release_befores_token_says_it_brings_no_parts(server):
    link = make_link(owner=make_user(), url="https://example.org/")
    page = Stream(server, live.events_url(live.link_channels(link)))
    try:
        assert page.event_within("hello", 1.0) == b'{"parts":false}'
        store_click(link)
        assert page.clicks_within(1.0)
        assert page.event_within("part", live_server.PART_GAP + 0.5) is None
    finally:
        page.close()


def test_parts_are_made_one_at_a_time_within_their_share_and_each_at_most_every_gap():
    import asyncio

    from web.live_server import PART_GAP, RENDER_SHARE, Hub, Page

    took = 0.05
    made: list[tuple[float, str]] = []

    def make(part, user):
        made.append((time.monotonic(), part["slug"]))
        time.sleep(took)
        return f"<p>{part['slug']}</p>"

    async def run():
        loop = asyncio.get_running_loop()
        hub = Hub(loop, make=make)
        pages = [
            Page(live.Subscription([f"link:{n}"], {"view": "link", "slug": f"s{n}", "query": "", "zone": "UTC"}, 1))
            for n in range(4)
        ]
        for page in pages:
            hub.add(page)
        started = loop.time()
        while loop.time() - started < PART_GAP * 0.75:  # every link's clicks, ten times a second
            for n in range(4):
                hub.wake(f"link:{n}")
            await asyncio.sleep(0.1)
        await asyncio.sleep(PART_GAP + 4 * took / RENDER_SHARE)
        return pages

    pages = asyncio.run(run())
    assert all(b"part" in page.waiting for page in pages)
    starts = [at for at, _ in made]
    rests = [later - earlier for earlier, later in zip(starts, starts[1:], strict=False)]
    assert min(rests) >= took / RENDER_SHARE - 0.02, rests  # one at a time, resting three times as long
    for slug in {slug for _, slug in made}:
        times = [at for at, one in made if one == slug]
        assert len(times) == 2, made  # at once, then once the gap is over (woken all the while)
        assert times[1] - times[0] >= PART_GAP - 0.02

"""`manage.py serve_live`: the server-sent events of web/live.py, for the
dashboard's front to pass `/live/events` to (dashboard/nginx.conf). One
asyncio loop holds every open page, a few kilobytes each; one thread
listens to Redis (PSUBSCRIBE slingshot:live:*) and wakes the pages whose
channel a message names; one thread makes the pages' live parts
(web/live_parts.py), each once for all the pages that show it, and at
most RENDER_SHARE of its time."""

import asyncio
import logging
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import orjson
import redis
from aiohttp import web
from django.db import connections

from slingshot.redis import get_redis

from . import live_parts
from .live import CHANNEL_PREFIX, STREAM_SECONDS, Subscription, subscription_of

log = logging.getLogger(__name__)

# A comment line this often keeps proxies and browsers from closing an idle stream.
HEARTBEAT_SECONDS = 15.0
# The least time between two wake-ups of a channel's pages.
WAKE_GAP = 1.0
# The least time between two makings of one live part: its clicks come
# with every wake-up; the rest of what they change, at most this often.
PART_GAP = 2.0
# The most of its time the making thread spends making parts: after a part
# that took t, it rests t * (1 / RENDER_SHARE - 1), so that however many
# parts are due, serve_live takes at most this share of a core (and the
# database its queries) from the dashboard's pages.
RENDER_SHARE = 0.25
# What a stream's first event says: its page is pushed its part or not.
HELLO = b"retry: 2000\nevent: hello\ndata: %s\n\n"
EVENT = b"event: %s\ndata: %s\n\n"
KEEP_ALIVE = b": keep-alive\n\n"
# An event that ends the stream: the person may no longer see the part.
END = b"end"


class Page:
    """An open stream: what it hears and shows, and its events waiting to
    be written, the latest of each kind (newer counts replace older)."""

    __slots__ = ("channels", "part", "key", "user", "waiting", "ready")

    def __init__(self, subscription: Subscription):
        self.channels = subscription.channels
        self.part = subscription.part
        self.key = orjson.dumps(self.part, option=orjson.OPT_SORT_KEYS) if self.part else None
        self.user = subscription.user
        self.waiting: dict[bytes, bytes] = {}
        self.ready = asyncio.Event()

    def tell(self, event: bytes, data: bytes) -> None:
        self.waiting[event] = data
        self.ready.set()


class Hub:
    """The open pages by channel and by part. A channel wakes its pages at
    most once every WAKE_GAP seconds (a busy link's batches come several a
    second), with its latest counts; a wake-up makes the pages' parts again,
    each at most every PART_GAP seconds, one at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, make=None):
        self.loop = loop
        self.pages: dict[str, set[Page]] = defaultdict(set)
        self.parts: dict[bytes, set[Page]] = defaultdict(set)
        self.open = 0
        self._woken: dict[str, float] = {}  # channel -> when its pages were last woken
        self._later: set[str] = set()  # channels with a wake-up waiting for its gap
        self._data: dict[str, bytes] = {}  # channel -> the latest message's data, for the wake-up waiting
        self._make = make  # live_parts.make when None, looked up at each making
        self._maker = ThreadPoolExecutor(1, thread_name_prefix="live-parts")
        self._making = asyncio.Lock()  # one part at a time, and the rest after it
        self._made: dict[bytes, float] = {}  # part -> when it was last made
        self._due: set[bytes] = set()  # parts with a making on its way
        self._again: set[bytes] = set()  # ... and woken again since its making began
        self._tasks: set[asyncio.Task] = set()

    async def close(self) -> None:
        """Lets go of the making thread, and of its database connection."""
        await self.loop.run_in_executor(self._maker, connections.close_all)
        self._maker.shutdown()

    def add(self, page: Page) -> None:
        for channel in page.channels:
            self.pages[channel].add(page)
        if page.key:
            self.parts[page.key].add(page)
        self.open += 1

    def remove(self, page: Page) -> None:
        for channel in page.channels:
            self.pages[channel].discard(page)
            if not self.pages[channel]:
                del self.pages[channel]
                self._data.pop(channel, None)
        if page.key and page.key in self.parts:
            self.parts[page.key].discard(page)
            if not self.parts[page.key]:
                del self.parts[page.key]
                self._made.pop(page.key, None)
        self.open -= 1

    def wake(self, channel: str, data: bytes = b"{}") -> None:
        if channel not in self.pages:
            return
        self._data[channel] = data
        if channel in self._later:
            return
        wait = self._woken.get(channel, float("-inf")) + WAKE_GAP - self.loop.time()
        if wait > 0:
            self._later.add(channel)
            self.loop.call_later(wait, self._wake_later, channel)
            return
        self._woken[channel] = self.loop.time()
        data = self._data.pop(channel, b"{}")
        keys = set()
        for page in self.pages[channel]:
            page.tell(b"clicks", data)
            if page.key:
                keys.add(page.key)
        for key in keys:
            self.make_soon(key)
        if len(self._woken) > 100_000:
            self._woken = {name: at for name, at in self._woken.items() if name in self.pages}

    def _wake_later(self, channel: str) -> None:
        self._later.discard(channel)
        if channel in self._data:
            self.wake(channel, self._data[channel])

    def make_soon(self, key: bytes) -> None:
        if key in self._due:
            self._again.add(key)
            return
        self._due.add(key)
        task = self.loop.create_task(self._make_part(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _make_part(self, key: bytes) -> None:
        try:
            wait = self._made.get(key, float("-inf")) + PART_GAP - self.loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            async with self._making:
                self._again.discard(key)  # the wake-ups so far: this making shows their clicks
                spent = await self._make_for_pages(key)
                if key in self.parts:
                    self._made[key] = self.loop.time()
                await asyncio.sleep(spent * (1 / RENDER_SHARE - 1))
        finally:
            self._due.discard(key)
            if key in self._again:
                self._again.discard(key)
                if key in self.parts:
                    self.make_soon(key)

    async def _make_for_pages(self, key: bytes) -> float:
        """Makes the part as one of its pages' people and pushes it to all
        of them; the pages of a person who may no longer see it are ended,
        and it is made as another's. Returns the time it took."""
        started = self.loop.time()
        while pages := self.parts.get(key):
            page = next(iter(pages))
            try:
                make = self._make or live_parts.make
                html = await self.loop.run_in_executor(self._maker, make, page.part, page.user)
            except Exception:
                log.exception("serve_live: a live part could not be made; its pages keep what they show")
                break
            if html is None:
                for gone in [other for other in pages if other.user == page.user]:
                    pages.discard(gone)
                    gone.tell(END, b"{}")
                continue
            data = orjson.dumps({"html": html})
            for other in pages:
                other.tell(b"part", data)
            break
        if key in self.parts and not self.parts[key]:
            del self.parts[key]
            self._made.pop(key, None)
        return self.loop.time() - started

    def listen(self, stopping: threading.Event) -> None:
        """In a thread of its own: Redis's messages to the loop, until `stopping`."""
        failures = 0
        while not stopping.is_set():
            try:
                pubsub = get_redis().pubsub(ignore_subscribe_messages=True)
                pubsub.psubscribe(CHANNEL_PREFIX + "*")
                failures = 0
                while not stopping.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message and message["type"] == "pmessage":
                        channel = message["channel"].decode()[len(CHANNEL_PREFIX) :]
                        data = message["data"] if b"\n" not in message["data"] else b"{}"
                        self.loop.call_soon_threadsafe(self.wake, channel, data)
            except (redis.RedisError, OSError) as exc:
                failures += 1
                log.warning("serve_live: Redis: %s; listening again in %.1f s", exc, min(5.0, 0.2 * 2**failures))
                stopping.wait(min(5.0, 0.2 * 2**failures))


HUB = web.AppKey("hub", Hub)


async def events(request: web.Request) -> web.StreamResponse:
    subscription = subscription_of(request.query.get("t", ""))
    if subscription is None:
        return web.Response(status=403, text="This page's events need a fresh token: load the page again.")
    hub = request.app[HUB]
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    page = Page(subscription)
    hub.add(page)
    try:
        await response.write(HELLO % orjson.dumps({"parts": page.key is not None}))
        ends = time.monotonic() + STREAM_SECONDS
        while (left := ends - time.monotonic()) > 0:
            try:
                await asyncio.wait_for(page.ready.wait(), timeout=min(HEARTBEAT_SECONDS, left))
            except TimeoutError:
                await response.write(KEEP_ALIVE)
                continue
            page.ready.clear()
            waiting, page.waiting = page.waiting, {}
            if END in waiting:
                break
            for event, data in waiting.items():
                await response.write(EVENT % (event, data))
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        hub.remove(page)
    return response


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "open": request.app[HUB].open})


def make_app(loop: asyncio.AbstractEventLoop) -> tuple[web.Application, Hub]:
    app = web.Application()
    hub = Hub(loop)
    app[HUB] = hub
    app.router.add_get("/live/events", events)
    app.router.add_get("/live/healthz", health)
    return app, hub


def serve(host: str, port: int, stopping: threading.Event) -> None:
    """Serves until `stopping` is set (the command's SIGTERM)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        app, hub = make_app(loop)
        listener = threading.Thread(target=hub.listen, args=(stopping,), name="live-redis", daemon=True)
        listener.start()
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        await web.TCPSite(runner, host, port, backlog=1024).start()
        log.info("serve_live: on %s:%d", host, port)
        while not stopping.is_set():
            await asyncio.sleep(0.2)
        await runner.cleanup()
        await asyncio.to_thread(listener.join, 3.0)  # it hands the loop no message once it has closed
        await hub.close()

    asyncio.run(main())

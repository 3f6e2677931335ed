"""`manage.py serve_live`: the server-sent events of web/live.py, for the
dashboard's front to pass `/live/events` to (dashboard/nginx.conf). One
asyncio loop holds every open page, a few kilobytes each; one thread
listens to Redis (PSUBSCRIBE slingshot:live:*) and wakes the pages whose
channel a message names."""

import asyncio
import logging
import threading
import time
from collections import defaultdict

import redis
from aiohttp import web

from slingshot.redis import get_redis

from .live import CHANNEL_PREFIX, STREAM_SECONDS, channels_of

log = logging.getLogger(__name__)

# A comment line this often keeps proxies and browsers from closing an idle stream.
HEARTBEAT_SECONDS = 15.0
# The least time between two wake-ups of a channel's pages.
WAKE_GAP = 1.0
OPENED = b"retry: 2000\n: open\n\n"
CLICKS = b"event: clicks\ndata: %s\n\n"
KEEP_ALIVE = b": keep-alive\n\n"


class Hub:
    """The open pages by channel; a page's queue holds at most one wake-up,
    and a channel wakes its pages at most once every WAKE_GAP seconds (a
    busy link's batches, several a second, would otherwise have each of
    its open pages fetch its report as often)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.pages: dict[str, set[asyncio.Queue]] = defaultdict(set)
        self.open = 0
        self._woken: dict[str, float] = {}  # channel -> when its pages were last woken
        self._later: set[str] = set()  # channels with a wake-up waiting for its gap
        self._data: dict[str, bytes] = {}  # channel -> the latest message's data, for the wake-up waiting

    def add(self, channels: list[str], queue: asyncio.Queue) -> None:
        for channel in channels:
            self.pages[channel].add(queue)
        self.open += 1

    def remove(self, channels: list[str], queue: asyncio.Queue) -> None:
        for channel in channels:
            self.pages[channel].discard(queue)
            if not self.pages[channel]:
                del self.pages[channel]
                self._data.pop(channel, None)
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
        for queue in self.pages[channel]:
            if not queue.empty():
                queue.get_nowait()  # the newer counts replace the older
            queue.put_nowait(data)
        if len(self._woken) > 100_000:
            self._woken = {name: at for name, at in self._woken.items() if name in self.pages}

    def _wake_later(self, channel: str) -> None:
        self._later.discard(channel)
        if channel in self._data:
            self.wake(channel, self._data[channel])

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
    channels = channels_of(request.query.get("t", ""))
    if channels is None:
        return web.Response(status=403, text="This page's events need a fresh token: load the page again.")
    hub = request.app[HUB]
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    queue: asyncio.Queue = asyncio.Queue(maxsize=1)
    hub.add(channels, queue)
    try:
        await response.write(OPENED)
        ends = time.monotonic() + STREAM_SECONDS
        while (left := ends - time.monotonic()) > 0:
            try:
                data = await asyncio.wait_for(queue.get(), timeout=min(HEARTBEAT_SECONDS, left))
            except TimeoutError:
                await response.write(KEEP_ALIVE)
            else:
                await response.write(CLICKS % data)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        hub.remove(channels, queue)
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

    asyncio.run(main())

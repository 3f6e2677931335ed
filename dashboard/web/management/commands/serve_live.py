"""`manage.py serve_live`: pushes new clicks to the open link pages and
overviews as server-sent events (web/live.py, web/live_server.py)."""

import threading

from django.conf import settings

from slingshot.commands import ServiceCommand
from web.live_server import serve


class Command(ServiceCommand):
    help = "Serves /live/events, the dashboard's pushed clicks, until stopped."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.LIVE_HOST)
        parser.add_argument("--port", type=int, default=settings.LIVE_PORT)

    def handle(self, *args, host: str, port: int, **options):
        stopping = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(stopping,), daemon=True)
        watcher.start()
        self.stdout.write(f"serve_live: on {host}:{port}")
        serve(host, port, stopping)
        self.stdout.write("serve_live: stopped")

    def _watch(self, stopping: threading.Event) -> None:
        while not self.stopping:
            self.pause(0.2)
        stopping.set()

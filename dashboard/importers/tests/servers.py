"""Local HTTP servers answering as another shortener's API does, with the
shapes its documentation gives (importers/tests/data/), for the sources
that read an API."""

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# (path, query) -> (status, body as JSON), or None for a 404.
Route = Callable[[str, dict[str, list[str]]], tuple[int, object] | None]


class ApiServer:
    """Serves `route` on a free port of 127.0.0.1 in a thread, to requests
    carrying `header: secret`; remembers every path asked for."""

    def __init__(self, route: Route, *, header: str, secret: str):
        self.asked: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                parts = urlsplit(self.path)
                server.asked.append(self.path)
                if self.headers.get(header) != secret:
                    self._answer(401, {"type": "https://shlink.io/api/error/invalid-api-key", "status": 401})
                    return
                found = route(parts.path, parse_qs(parts.query))
                self._answer(*(found or (404, {"status": 404})))

            def _answer(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "ApiServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def one_page(listing: dict) -> dict:
    """A list answer of Shlink's as the only page there is."""
    data = listing["data"]
    pagination = {"currentPage": 1, "pagesCount": 1, "itemsPerPage": len(data), "itemsInCurrentPage": len(data)}
    return {**listing, "pagination": {**pagination, "totalItems": len(data)}}

"""A webhook receiver outside the product: an HTTP server on loopback that
verifies every delivery with the Standard Webhooks spec's own library
(`standardwebhooks`), keeps what it got, and answers as told (a status, a
delay), to misbehave on purpose."""

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Delivery:
    msg_id: str
    headers: dict
    body: bytes
    verified: bool

    @property
    def event(self) -> dict:
        return orjson.loads(self.body)


@dataclass
class Receiver:
    secrets: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # answered in turn, then 200
    delay: float = 0.0
    got: list[Delivery] = field(default_factory=list)

    def start(self) -> "Receiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {name.lower(): value for name, value in self.headers.items()}
                verified = False
                for secret in receiver.secrets:
                    try:
                        Webhook(secret).verify(body, headers)
                        verified = True
                    except WebhookVerificationError:
                        pass
                with receiver._lock:
                    receiver.got.append(Delivery(headers.get("webhook-id", ""), headers, body, verified))
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                if receiver.delay:
                    threading.Event().wait(receiver.delay)
                answer = b'{"ok": true}' if status < 300 else b"x" * 5000
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the sender went away (killed, or timed out): what it sent is kept

            def log_message(self, *args):
                pass

        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def ids(self) -> list[str]:
        return [delivery.msg_id for delivery in self.got]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

"""One request to a server on 127.0.0.1, as the tests send it: no redirect
followed, the path sent as given, over TLS with the name a test gives."""

import http.client
import socket
import ssl
from dataclasses import dataclass


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


def http_request(port: int, path: str, *, method: str = "GET", headers: dict | None = None) -> Response:
    """One request, no redirect following, and the raw path sent as given
    (with the Host header given, if it is among the headers)."""
    headers = headers or {}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host="Host" in headers, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return Response(response.status, response.headers, response.read())
    finally:
        conn.close()


def https_request(
    port: int, path: str, *, context: ssl.SSLContext, server_name: str | None, headers: dict | None = None
) -> tuple[Response, bytes]:
    """A GET to 127.0.0.1 over TLS, `server_name` in SNI and Host; with the
    certificate the server answered the handshake with (DER)."""
    headers = {"Host": server_name or "127.0.0.1", **(headers or {})}
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context)
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            conn.sock = context.wrap_socket(sock, server_hostname=server_name)
        except BaseException:
            sock.close()  # else nginx waits for it to speak before it can stop
            raise
        peer = conn.sock.getpeercert(binary_form=True)
        conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return Response(response.status, response.headers, response.read()), peer
    finally:
        conn.close()

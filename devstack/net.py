"""Ports on 127.0.0.1: a free one, and waiting until a server listens on
one or answers there."""

import http.client
import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, *, timeout: float = 30.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def wait_for_answer(
    port: int, *, path: str = "/healthz", timeout: float = 60.0, process: subprocess.Popen | None = None
) -> int:
    """Waits until the HTTP server on 127.0.0.1:port answers a GET of
    `path`, whatever its status, which it returns. gunicorn listens as soon
    as its master runs, while its workers load the application for seconds
    more (a first start, a loaded machine: tens of seconds); a request made
    meanwhile waits in the queue, so a caller's first request with a
    timeout of its own may not be answered in it."""
    deadline = time.monotonic() + timeout
    wait_for_port(port, timeout=timeout, process=process)
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=max(0.1, deadline - time.monotonic()))
        try:
            conn.request("GET", path)
            return conn.getresponse().status
        except (OSError, http.client.HTTPException):
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"{process.args[0]} exited with {process.returncode} before answering") from None
            if time.monotonic() > deadline:
                raise TimeoutError(f"127.0.0.1:{port} did not answer {path} within {timeout}s") from None
            time.sleep(0.05)
        finally:
            conn.close()

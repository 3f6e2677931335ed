"""Ports on 127.0.0.1: a free one (given to one process only), and waiting
until a server listens on one or answers there."""

import http.client
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

# Ports given out, a file each naming the process that asked, for every
# process on the machine that asks free_port (tests on several pytest
# workers, other checkouts').
PORT_CLAIMS = Path(tempfile.gettempdir()) / "slingshot-ports"


def free_port() -> int:
    """A port nothing listens on, and that no living process has had from
    this function. bind(0) alone gives a port that is free now: two
    processes that ask at once may both be given it before either server
    binds it, or one may be given the port of a server another process
    stopped and starts again; and the edge listens with `reuseport`
    (nginx.conf), so two edges would then share it and answer each other's
    visitors."""
    if not PORT_CLAIMS.is_dir():
        PORT_CLAIMS.mkdir(exist_ok=True)
        PORT_CLAIMS.chmod(0o1777)
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if _claim(PORT_CLAIMS / str(port)):
            return port


def _claim(path: Path) -> bool:
    """Whether this process now holds the claim `path` (a file holding the
    claimer's pid, made with O_EXCL: of two processes, one makes it); the
    claim of a process that has ended is taken over."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _claimer_lives(path):
                return False
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as claim:
            claim.write(str(os.getpid()))
        return True
    return False


def _claimer_lives(path: Path) -> bool:
    """Whether the process named in the claim `path` still runs. A claim
    without a pid is being written this instant, or was made before claims
    named their process: its age tells."""
    try:
        text = path.read_text()
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return False
    if not text.strip().isdigit():
        return age < 5
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's
    return True


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

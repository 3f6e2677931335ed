"""The whole `make run` stack, started for a test or a measurement: in a
directory of its own, on free ports, as `make run` starts it on a terminal
(a pseudo-terminal here, so that Ctrl-C is a real one), and driven through
supervisord's XML-RPC interface. tests/test_stack.py and the scripts in
loadtest/ use it; the scenarios in loadtest/scenarios/ kill its processes
(faults.py) and hold its dashboard's connections (slowclients.py).
"""

import http.cookiejar
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import devstack
from devstack.envfile import read_env_file
from devstack.net import free_port, wait_for_answer
from devstack.postgres import wait_for_postgres
from devstack.programs import PORT_DEFAULTS
from devstack.supervision import all_running, supervisor_rpc

# What the stack needs from the environment that starts it; the rest (a test
# run's DATABASE_URL, say) stays out.
PASSED_ON = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PG_BINDIR", "NGINX_BIN")

# For tests that are not about a slow Redis. Under the whole suite (four
# pytest processes on two cores, load average 15 to 18) a Redis call has
# waited longer than the programs' timeouts (an edge's 250 ms read, the
# dashboard's 250 ms call, after which each doubts or skips Redis for 5 s)
# several times a run: the edge then answered 503 and the password check
# "try again". Redis that is gone still fails at once (refused).
PATIENT_REDIS_EDGE = {"EDGE_REDIS_READ_TIMEOUT_MS": "3000", "EDGE_REDIS_CONNECT_TIMEOUT_MS": "3000"}
PATIENT_REDIS = {**PATIENT_REDIS_EDGE, "REDIS_REQUEST_TIMEOUT": "3"}


def wait_until(condition, *, timeout: float, what: str, interval: float = 0.05):
    """Polls `condition` until it returns something true, which it returns."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        time.sleep(interval)


class SupervisedStack:
    def __init__(self, root: Path, *, env: dict[str, str] | None = None, repo: Path = devstack.REPO) -> None:
        self.root = root
        self.repo = repo  # the checkout whose `make run` starts it: another version's, for tests/test_upgrade.py
        self.run = root / "run"
        self.ports = {name: free_port() for name in PORT_DEFAULTS}
        self.env = {
            **{name: os.environ[name] for name in PASSED_ON if name in os.environ},
            "TERM": "dumb",
            "SLINGSHOT_RUN_DIR": str(self.run),
            **{name: str(number) for name, number in self.ports.items()},
            **(env or {}),
        }
        self.console_path = root / "console.log"
        self.pid = None
        self.exit_status = None
        self._terminal = None
        self._reader = None
        self._hanging_up = threading.Event()

    @property
    def edge_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['EDGE_PORT']}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['DASHBOARD_PORT']}"

    def start(self, *, timeout: float = 240.0) -> "SupervisedStack":
        """`make run` on a pseudo-terminal (setup skipped: the caller has done
        it), until every program is RUNNING, the dashboard answers, as
        before `make run` shows its banner, and PostgreSQL takes connections:
        an older checkout's dashboard, which the upgrade tests start, has no
        health check to wait for it, and supervisord may be starting it
        again after its first start's set-up."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)  # PostgreSQL runs as `postgres` when we are root
        if self._terminal is not None:  # started before: again, on a new terminal
            self._reader.join(timeout=10)
            os.close(self._terminal)
        self.exit_status = None
        make = shutil.which("make") or "make"
        pid, terminal = pty.fork()
        if pid == 0:  # the child: a session leader with the terminal as its own
            try:
                os.chdir(self.repo)
                os.execve(make, [make, "--no-print-directory", "-o", "setup", "run"], self.env)
            finally:
                os._exit(127)
        self.pid, self._terminal = pid, terminal
        self._hanging_up.clear()
        self._reader = threading.Thread(target=self._read_terminal, args=(terminal,), daemon=True)
        self._reader.start()
        wait_until(
            lambda: self.exited() or (self.all_running() and self._dashboard_answers()),
            timeout=timeout,
            what="every program RUNNING and the dashboard answering",
            interval=0.5,
        )
        if self.exit_status is not None:
            raise RuntimeError(f"make run exited with {self.exit_status}:\n{self.console()[-3000:]}")
        wait_for_postgres(self.run / "pg", self.ports["POSTGRES_PORT"], timeout=60)
        return self

    def _dashboard_answers(self) -> bool:
        """Whether a worker of the dashboard has loaded and answers its
        health check: 200, or 404 from a checkout older than the check (the
        upgrade tests start those too); not the front's 502 to 504 while
        gunicorn is not up, nor a 503 of PostgreSQL or Redis not answering."""
        try:
            status = wait_for_answer(int(self.ports["DASHBOARD_PORT"]), timeout=2)
        except TimeoutError:
            return False
        return status not in (502, 503, 504)

    def _read_terminal(self, terminal: int) -> None:
        with open(self.console_path, "ab") as out:
            while not self._hanging_up.is_set():
                if not select.select([terminal], [], [], 0.1)[0]:
                    continue
                try:
                    data = os.read(terminal, 65536)
                except OSError:  # EIO: every process that had the terminal has gone
                    return
                if not data:
                    return
                out.write(data.replace(b"\r\n", b"\n"))
                out.flush()

    def console(self) -> str:
        """Everything `make run` has printed so far."""
        return self.console_path.read_text(errors="replace") if self.console_path.exists() else ""

    def exited(self) -> bool:
        if self.exit_status is None and self.pid is not None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.exit_status = os.waitstatus_to_exitcode(status)
        return self.exit_status is not None

    # --- supervisord --------------------------------------------------------------

    @property
    def secrets(self) -> dict[str, str]:
        return read_env_file(self.run)

    def manage(self, *args: str, env: dict[str, str] | None = None, **run) -> subprocess.CompletedProcess:
        """manage.py against the stack, the way its README tells a person to
        run it (with `env` added to the stack's environment)."""
        return subprocess.run(
            [sys.executable, str(devstack.REPO / "dashboard" / "manage.py"), *args],
            env={**self.env, "SLINGSHOT_ENV_FILE": str(self.run / "env"), **(env or {})},
            capture_output=True,
            text=True,
            timeout=120,
            **run,
        )

    def rpc(self):
        """A new client each time: one whose request failed cannot send another."""
        return supervisor_rpc({**self.secrets, "SLINGSHOT_RUN_DIR": str(self.run)})

    def info(self, name: str) -> dict:
        return self.rpc().supervisor.getProcessInfo(name)

    def all_running(self) -> bool:
        return (self.run / "env").exists() and all_running({**self.secrets, "SLINGSHOT_RUN_DIR": str(self.run)})

    def master_pid(self, program: str) -> int | None:
        """nginx's or gunicorn's master, which devstack's keep_group starts;
        None between two masters."""
        try:
            return int((self.run / f"{program}-master.pid").read_text())
        except (OSError, ValueError):
            return None

    # --- stopping -------------------------------------------------------------------

    def interrupt(self) -> None:
        """Ctrl-C on the terminal."""
        os.write(self._terminal, b"\x03")

    def hang_up(self) -> None:
        """The terminal goes, as when its window is closed or its SSH session
        drops: closed once the reader has stopped reading it (a read under
        way would hold it open)."""
        self._hanging_up.set()
        self._reader.join(timeout=10)
        os.close(self._terminal)
        self._terminal = None

    def wait_exit(self, *, timeout: float) -> int:
        wait_until(self.exited, timeout=timeout, what="make run to exit")
        if self._reader is not None:
            self._reader.join(timeout=10)
        return self.exit_status

    def cleanup(self, *, remove: bool = True) -> None:
        """Stops whatever still runs (a test that failed half-way), then
        removes the directory unless told to keep it."""
        if self.pid is not None and not self.exited():
            self.interrupt()
            try:
                self.wait_exit(timeout=120)
            except TimeoutError:
                os.kill(self.pid, signal.SIGKILL)
                self.wait_exit(timeout=10)
        # The runner's end stops supervisord (die_with_parent), which stops the programs.
        pidfile = self.run / "supervisord.pid"
        if pidfile.exists():
            try:
                pid = int(pidfile.read_text())
                wait_until(lambda: not Path(f"/proc/{pid}").exists(), timeout=120, what="supervisord to exit")
            except (ValueError, TimeoutError):
                pass
        if self._terminal is not None:
            os.close(self._terminal)
            self._terminal = None
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)


# --- a person at the dashboard ---------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def sign_in(
    stack: SupervisedStack, username: str, password: str, *, timeout: float = 10
) -> urllib.request.OpenerDirector | None:
    """The dashboard's sign-in form, as a browser fills it in: the signed-in
    session (redirects not followed), or None."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
    url = f"{stack.dashboard_url}/sign-in/"
    page = opener.open(url, timeout=timeout).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": username, "password": password})
    try:
        opener.open(urllib.request.Request(url, data=form.encode(), headers={"Referer": url}), timeout=timeout)
    except urllib.error.HTTPError as exc:
        return opener if exc.code == 302 else None  # signed in: sent on to the overview
    return None  # the form again, with its error


def session_cookie(session: urllib.request.OpenerDirector) -> str:
    """A session's cookies, as a Cookie header carries them."""
    (cookies,) = (handler for handler in session.handlers if isinstance(handler, urllib.request.HTTPCookieProcessor))
    return "; ".join(f"{cookie.name}={cookie.value}" for cookie in cookies.cookiejar)


def redirected_to(session: urllib.request.OpenerDirector, url: str, *, timeout: float = 10) -> str | None:
    """Where a page sends the session (None: it is shown)."""
    try:
        session.open(url, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 302:
            return exc.headers["Location"]
        raise
    return None

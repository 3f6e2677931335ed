"""Throwaway PostgreSQL and Redis for the test run (loaded with `-p`).

They start when pytest loads this plugin, before pytest-django reads the
Django settings, on free ports in a temporary folder, and are removed when
the run ends. Tests get nginx edges from the `edge` fixtures below.

Under pytest-xdist (`make test` runs `pytest -n`) each worker is a pytest
process of its own, and so has its own PostgreSQL, Redis and edges; a
file's tests run on one worker, in their order (`--dist loadfile`, with
the scopes of `run_scope`), the files with slow tests first
(`slow_scopes_first`). `-m "not slow"`
(`make test-fast`) says how many slow tests it left out.
"""

import atexit
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import devstack
from devstack.edge import edge_command, render_edge_conf
from devstack.http_client import Response, http_request, https_request
from devstack.net import free_port, wait_for_port
from devstack.supervised import PATIENT_REDIS_EDGE
from devstack.throwaway import ThrowawayStack

SERVERS = ThrowawayStack(prefix="slingshot-test-")
SLOW_LEFT_OUT = pytest.StashKey[int]()
SERVERS.start()
# The edges' click rings in a tmpfs folder of this run's, removed with it:
# an edge a test kills leaves its rings, which no later edge takes over.
SCRATCH = Path("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
CLICK_MEMORY = Path(tempfile.mkdtemp(prefix="slingshot-test-clicks-", dir=SCRATCH))
os.environ.update(
    SERVERS.environment(),
    # Tests see a change in Redis as soon as its transaction commits; those
    # of the way a change travels in production take `through_publisher`.
    LINK_PUBLISH_INLINE="true",
    EDGE_CLICK_MEMORY_DIR=str(CLICK_MEMORY),
)
atexit.register(SERVERS.cleanup)
atexit.register(shutil.rmtree, CLICK_MEMORY, ignore_errors=True)


class Edge:
    """An nginx running the top-level nginx.conf against the test Redis."""

    def __init__(
        self, *, workers: int = 2, env: dict[str, str] | None = None, edit_conf: Callable[[str], str] | None = None
    ) -> None:
        self.edit_conf = edit_conf  # changes the rendered nginx.conf, for tests of a broken one
        self.port = free_port()
        self.tls_port = free_port()
        # A folder of its own, never a gone edge's that had the same port: an
        # edge takes over the click journals its spool holds, and sends their
        # hours' counts again as they stand, which another test counted.
        self.prefix = Path(tempfile.mkdtemp(prefix=f"nginx-{self.port}-", dir=SERVERS.root))
        self.prefix.chmod(0o755)  # as a folder nginx made: its workers' user goes through it
        self.workers = workers
        self.env = {
            **os.environ,
            "EDGE_CLICK_FLUSH_INTERVAL": "0.05",
            "EDGE_HTTPS_PORT": str(self.tls_port),
            **(env or {}),
        }
        self.log_path = self.prefix / "stderr.log"
        self.process = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Edge":
        # Tests connect from 127.0.0.1 and may say, in X-Forwarded-For, which
        # visitor they stand for (country rules, splits).
        conf = render_edge_conf(self.prefix, self.port, tls_port=self.tls_port, real_ip_from="127.0.0.0/8")
        if self.edit_conf:
            conf.write_text(self.edit_conf(conf.read_text()))
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            edge_command(self.prefix, workers=self.workers),
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        SERVERS.processes.append(self.process)
        wait_for_port(self.port, process=self.process)
        return self

    def reload(self) -> None:
        self.process.send_signal(signal.SIGHUP)

    def stop(self) -> None:
        """Graceful stop (SIGQUIT): workers send their clicks."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            self.process.wait(timeout=30)

    def request(self, path: str, *, method: str = "GET", headers: dict | None = None) -> "Response":
        return http_request(self.port, path, method=method, headers=headers)

    @property
    def cert_dir(self):
        """Where the edge looks for `<host>.crt` and `.key` (EDGE_CERT_DIR's default)."""
        return self.prefix / "conf" / "certs"

    def https_request(
        self, path: str, *, server_name: str | None, headers: dict | None = None
    ) -> tuple["Response", bytes]:
        """One request over TLS with this server name (SNI; None: none), and
        the certificate the edge answered the handshake with (DER). The
        certificate is not verified: the tests compare it with the file."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return https_request(self.tls_port, path, context=context, server_name=server_name, headers=headers)

    def mark(self) -> None:
        """From now on errors() reports only what is logged after this call."""
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0

    def errors(self) -> str:
        """Error lines logged since the last mark(): the shared edge is marked
        at the start of every test, so one test's outage is not another's error."""
        text = ""
        if self.log_path.exists():
            with self.log_path.open("rb") as log:
                log.seek(getattr(self, "_log_offset", 0))
                text = log.read().decode(errors="replace")
        return "\n".join(
            line
            for line in text.splitlines()
            if "[error]" in line or "[crit]" in line or "[alert]" in line or "[emerg]" in line
        )


@pytest.fixture(scope="session")
def servers() -> ThrowawayStack:
    return SERVERS


# The files whose tests share the ClickHouse cluster: one worker runs them
# all, one after the other (run_scope), and stops the cluster after the last.
CLICKHOUSE_FILES = "test_clickhouse_"
CLICKHOUSE_SCOPE = "the ClickHouse cluster's files"


class _ClickHouseRun:
    """This process's cluster, once started, and whether it stopped."""

    cluster = None
    stopped = False


@pytest.fixture(scope="session")
def clickhouse_cluster():
    """Two shards of two replicas of ClickHouse 18.16 and their ZooKeeper
    (devstack/clickhouse.py), for the tests of test_clickhouse_*.py files;
    a few seconds. It stops after the last of them (pytest_runtest_teardown
    below): an idle cluster costs two seconds of CPU a minute."""
    from devstack.clickhouse import ClickHouseCluster

    # In memory: their tests leave 400,000 small files of parts (18.16
    # keeps merged parts 8 minutes), which took a disk (ext4, discard) 83 s
    # to remove, tmpfs under 9 s.
    cluster = ClickHouseCluster(scratch=SCRATCH).start()
    _ClickHouseRun.cluster = cluster
    yield cluster
    cluster.cleanup()


@pytest.fixture(scope="session")
def _shared_edge():
    running = Edge(env=PATIENT_REDIS_EDGE).start()
    yield running
    running.stop()


# After Redis failed it, an edge answers unknown slugs 503 for this long
# (edge/slingshot/linklookup.lua, DOUBT_SECONDS), and a second more.
EDGE_DOUBT_SECONDS = 5 + 1


def _settled(shared: "Edge") -> "Edge":
    """The shared edge, once an outage an earlier test caused (the errors
    it logged since that test) no longer has it doubt unknown slugs: each
    test gets the edge as a fresh start would, whichever test ran before it
    on this process."""
    if shared.errors():
        time.sleep(EDGE_DOUBT_SECONDS)
    shared.mark()
    return shared


@pytest.fixture
def edge(_shared_edge):
    """One edge with two workers, shared by the whole run."""
    return _settled(_shared_edge)


@pytest.fixture(scope="session")
def _password_edge(live_server):
    # By address: nginx resolves a name only with a `resolver`, which the
    # test edge has not.
    port = live_server.url.rsplit(":", 1)[1]
    running = Edge(env={**PATIENT_REDIS_EDGE, "EDGE_DASHBOARD_URL": f"http://127.0.0.1:{port}"}).start()
    yield running
    running.stop()


@pytest.fixture
def password_edge(_password_edge):
    """An edge that has link passwords checked by the test run's live
    dashboard (pytest-django's live_server), with the run's
    EDGE_DASHBOARD_SECRET; shared by the whole run."""
    return _settled(_password_edge)


# Where an edge's Redis is set (edge/slingshot/config.lua): an edge whose
# env sets none of these reads its process's shared Redis.
_REDIS_ADDRESS = ("REDIS_HOST", "REDIS_PORT", "REDIS_SENTINELS", "EDGE_LINKS_REDIS_", "EDGE_CLICKS_REDIS_")


@pytest.fixture
def make_edge():
    """Starts edges with their own settings; stops them after the test.

    An edge on the shared Redis waits on it as the shared edges do
    (PATIENT_REDIS_EDGE; its env may still say otherwise); an edge on a
    Redis of its test's own keeps the edge's own timeouts, which the fault
    tests are about. A test that faults the shared Redis asks for those
    with `patient_redis=False`."""
    started = []

    def factory(*, env: dict[str, str] | None = None, patient_redis: bool | None = None, **kwargs) -> Edge:
        env = env or {}
        if patient_redis is None:
            patient_redis = not any(key.startswith(_REDIS_ADDRESS) for key in env)
        if patient_redis:
            env = {**PATIENT_REDIS_EDGE, **env}
        running = Edge(env=env, **kwargs).start()
        started.append(running)
        return running

    yield factory
    for running in started:
        running.stop()


@pytest.fixture(scope="module")
def publisher_process(django_db_setup, django_db_blocker):
    """The real publisher (`manage.py run_publisher`) on the test database,
    for the tests of one module: tests elsewhere run publishers of their own.
    Its fallback poll is a minute: a change reaches Redis through the outbox
    and NOTIFY, or not in time for any test."""
    from django.db import connection

    with django_db_blocker.unblock():
        db = connection.settings_dict
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        }
        process = subprocess.Popen(
            [sys.executable, str(devstack.REPO / "dashboard" / "manage.py"), "run_publisher", "--interval", "60"],
            env=env,
            stdout=open(SERVERS.root / "publisher.log", "ab"),
            stderr=subprocess.STDOUT,
        )
        SERVERS.processes.append(process)
        deadline = time.monotonic() + 30
        with connection.cursor() as cursor:
            while True:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %%'")
                if cursor.fetchone()[0]:
                    break
                assert process.poll() is None and time.monotonic() < deadline, "the publisher did not start"
                time.sleep(0.02)
        connection.close()
    yield process
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def through_publisher(publisher_process, settings):
    """Link changes go the production way: outbox, NOTIFY, the publisher
    process, Redis; the request that makes one does not deliver it."""
    settings.LINK_PUBLISH_INLINE = False
    return publisher_process


# --- running the suite on several processes (pytest-xdist) and without the slow tests


def run_scope(nodeid: str) -> str:
    """The tests one worker runs together, one after the other: a file's,
    and all of the test_clickhouse_*.py files' as one, so that a single
    process starts the ClickHouse cluster, and only once."""
    path = nodeid.split("::", 1)[0]
    return CLICKHOUSE_SCOPE if Path(path).name.startswith(CLICKHOUSE_FILES) else path


@pytest.hookimpl(optionalhook=True)  # an xdist hook
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` with run_scope's scopes rather than files."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LoadRunScopeScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return run_scope(nodeid)

    return LoadRunScopeScheduling(config, log)


@pytest.hookimpl(tryfirst=True)  # after pytest-django's, which orders the tests by their kind of database
def pytest_collection_modifyitems(config, items):
    slow_scopes_first(items)


def slow_scopes_first(items) -> None:
    """The scopes (run_scope) with slow tests first, those with the most
    first: with `--dist loadfile --no-loadscope-reorder` (`make test`)
    workers take whole scopes in this order, so that no long one starts last
    and keeps the run waiting on one worker. A scope's tests stay together,
    in their order, in one process too (TEST_WORKERS=0)."""
    scopes = [run_scope(item.nodeid) for item in items]
    slow = Counter(scope for scope, item in zip(scopes, items, strict=True) if item.get_closest_marker("slow"))
    first = {scope: index for index, scope in reversed(list(enumerate(scopes)))}
    order = {id(item): (-slow[scope], first[scope]) for scope, item in zip(scopes, items, strict=True)}
    items.sort(key=lambda item: order[id(item)])


def pytest_runtest_setup(item):
    if "clickhouse_cluster" not in item.fixturenames:
        return
    if run_scope(item.nodeid) != CLICKHOUSE_SCOPE:
        pytest.fail(f"the ClickHouse cluster is for the tests of {CLICKHOUSE_FILES}*.py files (run_scope)")
    if _ClickHouseRun.stopped:
        pytest.fail("the ClickHouse cluster stopped after its files' tests: this one ran apart from them")


@pytest.hookimpl(trylast=True)  # after the fixtures' own teardown
def pytest_runtest_teardown(item, nextitem):
    """Stops the ClickHouse cluster once this process has run the last of
    the tests that share it (run_scope keeps them together)."""
    last = nextitem is None or run_scope(nextitem.nodeid) != CLICKHOUSE_SCOPE
    if _ClickHouseRun.cluster is not None and run_scope(item.nodeid) == CLICKHOUSE_SCOPE and last:
        _ClickHouseRun.cluster.cleanup()
        _ClickHouseRun.stopped = True


def pytest_deselected(items):
    config = items[0].config if items else None
    if config is not None and "slow" in (config.option.markexpr or ""):
        config.stash[SLOW_LEFT_OUT] = config.stash.get(SLOW_LEFT_OUT, 0) + sum(
            1 for item in items if item.get_closest_marker("slow")
        )


@pytest.hookimpl(optionalhook=True)  # an xdist hook
def pytest_testnodedown(node, error):
    """A worker's count of the slow tests it left out, for the summary
    (every worker collects, and leaves out, all of them)."""
    config = node.config
    config.stash[SLOW_LEFT_OUT] = max(config.stash.get(SLOW_LEFT_OUT, 0), node.workeroutput.get("slow_left_out", 0))


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its controller prints the summary
        workeroutput["slow_left_out"] = session.config.stash.get(SLOW_LEFT_OUT, 0)


def pytest_terminal_summary(terminalreporter, config):
    left_out = config.stash.get(SLOW_LEFT_OUT, 0)
    if left_out and not hasattr(config, "workerinput"):
        terminalreporter.write_line(
            f"{left_out} slow tests (@pytest.mark.slow) not run: `make test` runs them", yellow=True, bold=True
        )

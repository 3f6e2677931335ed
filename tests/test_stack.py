"""The supervised local stack, `make run`, against real processes: one stack
started as a person starts it (make, on a terminal, no admin password
given), in a temporary directory on free ports, shared by the tests below in
this order: what its first start prints, the dashboard's front (what it
passes on, slow clients), its processes killed one by one under traffic, a
forgotten password reset, a backup of it restored into a new run directory
and started there, a program that cannot start, Ctrl-C, a backup of the
stopped stack, ports taken by another program, a second start that keeps
its ports. `pytest -s` prints the figures.
"""

import hashlib
import http.client
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import psycopg
import pytest
import redis
from django.conf import settings

import devstack
from devstack.console import Console
from devstack.net import free_port
from devstack.postgres import db_owner, postgres_command, wait_for_postgres
from devstack.stack import SECRETS
from devstack.supervised import PATIENT_REDIS, SupervisedStack, redirected_to, sign_in, wait_until
from loadtest.scenarios.faults import EDGE_FAULTS, FAULTS, FaultRun
from loadtest.scenarios.slowclients import SlowClients, probe_all, stack_probes, table
from loadtest.scenarios.visitors import request
from web.source_import_views import FILES

pytestmark = pytest.mark.slow  # a whole `make run` stack: `make test-fast` leaves it out

ADMIN = "ops"
FORM = "application/x-www-form-urlencoded"
STOP_ORDER = (
    "edge",
    "live",
    "front",
    "webhooks",
    "linkhealth",
    "screen",
    "imports",
    "dashboard",
    "publisher",
    "importer",
    "postgres",
    "redis",
)


@pytest.fixture(scope="module")
def stack():
    # Not pytest's tmp_path: PostgreSQL runs as `postgres`, which cannot enter it.
    root = Path(tempfile.mkdtemp(prefix="slingshot-stack-"))
    running = SupervisedStack(root, env={**PATIENT_REDIS, "SLINGSHOT_ADMIN_USER": ADMIN})
    try:
        yield running.start()
    finally:
        running.cleanup()


def banner_password(stack: SupervisedStack) -> str:
    """The admin's password, as the closing banner of the first start shows it."""
    return re.search(rf"Sign in as: +{ADMIN}, password (\S+)\n", stack.console()).group(1)


def test_the_first_start_ends_with_the_admins_password_and_says_each_thing_once(stack):
    wait_until(lambda: "Ctrl-C stops everything" in stack.console(), timeout=30, what="the banner")
    console = stack.console()
    banner = console[console.index("Slingshot is running") :]
    password = banner_password(stack)
    assert "the first sign-in asks for a password of your own" in banner
    # Shown once, in the banner, not among the preparation's lines.
    assert console.count(password) == 1
    # django-axes names its lockout rule once (the migration), not in every process.
    assert console.count("AXES: BEGIN") == 1, console
    # The first sign-in asks for a password of one's own before any page.
    session = sign_in(stack, ADMIN, password)
    assert session is not None
    assert redirected_to(session, f"{stack.dashboard_url}/links/") == "/password/"
    # `make logs` shows the programs' logs, not supervisord's event protocol with the console.
    logs = subprocess.run(
        ["timeout", "3", "make", "--no-print-directory", "logs"],
        cwd=devstack.REPO,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert "==> " in logs and "dashboard.log" in logs
    assert "READY" not in logs and "RESULT 2" not in logs and "console-stdout" not in logs, logs[:2000]


def test_no_secret_is_on_any_command_line(stack):
    secret_values = [stack.secrets[name] for name in SECRETS] + [banner_password(stack)]
    command_lines = "\n".join(_command_lines())
    assert stack.run.as_posix() in command_lines  # the stack's processes are among them
    for value in secret_values:
        assert value not in command_lines
    assert (stack.run / "env").stat().st_mode & 0o777 == 0o600
    assert (stack.run / "redis" / "redis.conf").stat().st_mode & 0o777 == 0o600
    # gunicorn's control socket is the stack's own, not one shared by the machine.
    wait_until((stack.run / "gunicorn.ctl").is_socket, timeout=60, what="gunicorn's control socket")


def _command_lines() -> list[str]:
    """What `ps` shows of every process: its arguments."""
    lines = []
    for entry in Path("/proc").iterdir():
        try:
            lines.append(entry.joinpath("cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return lines


def failed_sign_in(stack: SupervisedStack, username: str, *, source: str, forwarded_for: str) -> int:
    """A wrong password on the sign-in form, from the address `source`, by
    a client that says in X-Forwarded-For it is `forwarded_for`: the status."""
    headers = {"X-Forwarded-For": forwarded_for}

    def ask(method: str, body: str | None = None, extra: dict | None = None) -> tuple[http.client.HTTPResponse, str]:
        conn = http.client.HTTPConnection("127.0.0.1", stack.ports["DASHBOARD_PORT"], source_address=(source, 0))
        try:
            conn.request(method, "/sign-in/", body=body, headers={**headers, **(extra or {})})
            answer = conn.getresponse()
            return answer, answer.read().decode()
        finally:
            conn.close()

    form, page = ask("GET")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    cookie = form.headers["Set-Cookie"].split(";")[0]
    answer, _ = ask(
        "POST",
        urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": username, "password": "not it"}),
        {"Cookie": cookie, "Referer": f"{stack.dashboard_url}/sign-in/", "Content-Type": FORM},
    )
    return answer.status


def test_the_front_gives_the_dashboard_the_address_a_client_connected_from_whatever_it_says(stack):
    """People reach gunicorn through the front (dashboard/nginx.conf), which
    appends the address they connected from to X-Forwarded-For, and the
    dashboard (DASHBOARD_FRONT: one proxy) takes that one: sign-in throttling
    counts the client, neither the front nor the address it made up."""
    username = f"nobody-{secrets.token_hex(4)}"
    assert failed_sign_in(stack, username, source="127.0.0.9", forwarded_for="203.0.113.9") == 200  # the form again
    with psycopg.connect(stack.secrets["DATABASE_URL"]) as conn:
        counted = conn.execute(
            "SELECT host(ip_address) FROM axes_accessattempt WHERE username = %s", [username]
        ).fetchall()
    assert counted == [("127.0.0.9",)]


def test_the_front_keeps_the_edges_paths_and_refuses_what_the_dashboard_would_not_take(stack):
    front, gunicorn = stack.ports["DASHBOARD_PORT"], stack.ports["GUNICORN_PORT"]
    # The edges call gunicorn itself; the front publishes none of their paths, however spelt.
    for path in (
        "/internal/link-password",
        "/internal/yourls-api",
        "//internal/yourls-api",
        "/%69nternal/link-password",
    ):
        assert request(front, path, method="POST", body={})[0] == 404, path
    assert request(gunicorn, "/internal/link-password", method="POST", body={})[0] == 401  # the edges' secret first
    # A body larger than any the dashboard takes is refused before it is stored, in the door's format.
    big = b"x" * (11 * 1024 * 1024)
    for path, kind in (("/api/v1/links", "application/problem+json"), ("/links/import/", "text/plain")):
        conn = http.client.HTTPConnection("127.0.0.1", front, timeout=10)
        try:
            conn.request("POST", path, body=big, headers={"Content-Type": FORM})
            answer = conn.getresponse()
            assert (answer.status, answer.headers["Content-Type"]) == (413, kind), path
        finally:
            conn.close()


def test_the_front_takes_every_body_the_dashboard_takes():
    """The front's limits (dashboard/nginx.conf) against the dashboard's:
    the Import page's files, and elsewhere the CSV import's and any form's."""
    conf = (devstack.REPO / "dashboard" / "nginx.conf").read_text()
    default = re.search(r"^    client_max_body_size (\d+)m;", conf, re.M).group(1)
    imports = re.search(r"location = /import/ \{[^}]*client_max_body_size (\d+)m;", conf).group(1)
    megabyte = 1024 * 1024
    assert int(default) * megabyte > settings.WEB_IMPORT_MAX_BYTES + settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert (
        int(imports) * megabyte
        > len(FILES) * settings.IMPORTERS_UPLOAD_MAX_BYTES + settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    )


SLOW_CLIENTS = 300


def test_slow_clients_hold_no_worker_and_everyone_else_is_answered_within_a_second(stack):
    """Slow clients (loadtest/scenarios/slowclients.py) that reach gunicorn
    stop it: three hold its two workers. Through the front, 300 of them for 10 s
    leave the dashboard's pages, its sign-in page and API, a link's
    password check and the YOURLS API through the edge answering, nine in
    ten within a second (the slowest are the shared machine's other load;
    `make slow-clients` is the long form)."""
    probes = stack_probes(stack)
    gunicorn = stack.ports["GUNICORN_PORT"]
    direct = SlowClients(gunicorn, connections=3).start()
    try:
        with pytest.raises(TimeoutError):
            request(gunicorn, "/healthz", timeout=3)
    finally:
        direct.stop()

    slow = SlowClients(stack.ports["DASHBOARD_PORT"], connections=SLOW_CLIENTS).start()
    held = []
    try:
        probe_all(probes, seconds=10, between=lambda: held.append(slow.held()))
    finally:
        slow.stop()
    print(f"\n{SLOW_CLIENTS} slow clients: held at once {statistics.median(held):.0f} (median), {min(held)} (fewest)")
    print(table(probes), flush=True)
    # Held throughout, but for the moments between the front letting some go and their coming back.
    assert slow.failed == 0 and statistics.median(held) >= SLOW_CLIENTS * 0.95, (slow.failed, held)
    for probe in probes:
        assert probe.wrong == [] and len(probe.seconds) >= 5, (probe.name, probe.wrong, len(probe.seconds))
        assert probe.percentiles()["p90"] <= 1.0, (probe.name, probe.percentiles())


@pytest.fixture(scope="module")
def fault_run(stack):
    return FaultRun(stack, admin=ADMIN, log=lambda line: print(line, flush=True))


@pytest.mark.parametrize("program", FAULTS)
def test_a_process_killed_under_traffic_comes_back_and_every_click_is_accounted_for(fault_run, stack, program):
    """One process killed with SIGKILL while visitors click a link of the
    fault's own: it comes back, every redirect served is one click stored,
    and the accounting of every hour so far is even (served == stored)."""
    result = fault_run.one(program)
    print(f"\n{program}: {result.served} served, {result.stored} stored, accounting {result.accounting}", flush=True)
    recovery = result.recovery
    assert recovery.back_after < 60, recovery
    assert recovery.dashboard_errors == 0, recovery
    assert result.served > 300
    assert result.every_redirect_stored, (result.served, result.stored, result.failed)
    assert result.accounting and set(result.accounting.values()) == {0}, result.accounting
    if program not in EDGE_FAULTS:
        # The cached link kept redirecting through every fault but the edge's own.
        assert recovery.edge_errors == 0, result
        # The crash was reported with the program's log file.
        console = stack.console()
        assert f"{program} (pid " in console and f"{stack.run}/logs/{program}.log" in console, program


def test_a_lost_admin_password_is_replaced_with_changepassword(stack):
    new_password = secrets.token_urlsafe(16)
    # No terminal: Django's getpass falls back to standard input.
    result = stack.manage("changepassword", ADMIN, input=f"{new_password}\n{new_password}\n", start_new_session=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Password changed successfully for user '{ADMIN}'" in result.stdout
    assert sign_in(stack, ADMIN, new_password)
    assert not sign_in(stack, ADMIN, banner_password(stack))


# --- make backup, make restore --------------------------------------------------------

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
# Seconds a request of this test may take: two stacks run at once, on a machine that may be busy.
PATIENCE = 60
# What the accounting says of an hour that a restore must keep ("settled" moves with the clock).
ACCOUNTED = ("hour", "served_redirects", "served_orphans", "stored_clicks", "stored_orphans", "difference", "counted")


def make(stack: SupervisedStack, *arguments: str) -> tuple[int, str]:
    """A make target of the README for the stack's run directory: its exit status and all it printed."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-o", "setup", *arguments],
        cwd=devstack.REPO,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout + done.stderr


def dashboard_answers(stack: SupervisedStack) -> bool:
    try:
        with urllib.request.urlopen(f"{stack.dashboard_url}/healthz", timeout=PATIENCE) as response:
            return response.status == 200
    except (OSError, urllib.error.HTTPError):
        return False


def edge_visit(port: int, path: str, *, form: dict | None = None, cookie: str | None = None) -> tuple[int, dict, bytes]:
    """One request to the edge, as a browser sends it: (status, headers, body)."""
    headers = {"User-Agent": FIREFOX}
    if cookie:
        headers["Cookie"] = cookie
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    try:
        conn.request("POST" if form is not None else "GET", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.headers), response.read()
    finally:
        conn.close()


def unlock(port: int, slug: str, password: str) -> tuple[int, dict]:
    """A link's password page, the password sent from it, and the visit the pass lets through."""
    status, _, page = edge_visit(port, f"/{slug}")
    assert status == 200, status
    (kept,) = re.findall(rb'name="ref" value="([^"]*)"', page)
    status, headers, _ = edge_visit(port, f"/{slug}", form={"ref": kept.decode(), "password": password})
    assert status == 200 and "Set-Cookie" in headers, (status, headers)
    status, headers, _ = edge_visit(port, f"/{slug}", cookie=headers["Set-Cookie"].split(";")[0])
    return status, headers


def api(stack: SupervisedStack, path: str, token: str, *, body: dict | None = None) -> dict:
    """The REST API with a Bearer token; a POST of `body` when it is given."""
    sent = urllib.request.Request(
        f"{stack.dashboard_url}{path}",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(sent, timeout=PATIENCE) as response:
        return json.loads(response.read())


def every_link(stack: SupervisedStack, token: str) -> list[dict]:
    links, page = [], 1
    while True:
        found = api(stack, f"/api/v1/links?page={page}&ordering=created_at", token)
        links += found["results"]
        if not found["next"]:
            return links
        page += 1


def yourls(stack: SupervisedStack, **params: str) -> tuple[int, dict]:
    query = urllib.parse.urlencode({**params, "format": "json"})
    try:
        with urllib.request.urlopen(f"{stack.dashboard_url}/yourls-api.php?{query}", timeout=PATIENCE) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def state(stack: SupervisedStack, token: str, signature: str, slugs: tuple[str, ...], stats_range: str) -> dict:
    """Everything a restore must bring back as it was, as the stack's clients read it."""
    links = every_link(stack, token)
    return {
        # The short URLs name the edge's port, which differs between the two stacks.
        "links": [{key: value for key, value in link.items() if key != "short_url"} for link in links],
        "stats": {slug: api(stack, f"/api/v1/links/{slug}/stats?{stats_range}", token) for slug in slugs},
        "orphans": api(stack, "/api/v1/orphan-visits?days=1&include_bots=true", token)["by_path"],
        "accounting": steady_accounting(stack, token),
        "yourls": yourls(stack, signature=signature, action="db-stats"),
        "stored": stored_clicks(stack),
    }


def accounting_hours(stack: SupervisedStack, token: str) -> list[dict]:
    """The accounting of every hour with traffic (an hour begun meanwhile has none)."""
    answer = api(stack, "/api/v1/accounting?days=1", token)["hours"]
    return [{key: hour[key] for key in ACCOUNTED} for hour in answer if any(hour[key] for key in ACCOUNTED[1:5])]


def steady_accounting(stack: SupervisedStack, token: str) -> list[dict]:
    """The accounting once two reads a second apart agree: the edges send
    their counts a moment after their clicks."""
    last = None

    def steady():
        nonlocal last
        found, previous = accounting_hours(stack, token), last
        last = found
        return found if found == previous else None

    return wait_until(steady, timeout=PATIENCE, interval=1.0, what="the accounting to hold still")


def iso_hour(unix: int) -> str:
    return time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(unix))


def stored_clicks(stack: SupervisedStack) -> dict[str, int]:
    with psycopg.connect(stack.secrets["DATABASE_URL"], connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT l.slug, count(c.*) FROM links_link l LEFT JOIN clicks c ON c.link_id = l.id GROUP BY l.slug"
        ).fetchall()
        orphans = conn.execute("SELECT count(*) FROM orphan_visits").fetchone()[0]
    return {**dict(rows), "(orphan visits)": orphans}


def sign_in_a_keeper(stack: SupervisedStack) -> urllib.request.OpenerDirector:
    """A second admin made and signed in: a session a restore must keep."""
    keeper, keeper_password = "keeper", secrets.token_urlsafe(16)
    made = stack.manage(
        "ensure_admin", env={"SLINGSHOT_ADMIN_USER": keeper, "SLINGSHOT_ADMIN_PASSWORD": keeper_password}
    )
    assert made.returncode == 0, made.stdout + made.stderr
    session = sign_in(stack, keeper, keeper_password, timeout=PATIENCE)
    assert session and redirected_to(session, f"{stack.dashboard_url}/links/", timeout=PATIENCE) is None
    return session


def make_and_visit_three_links(stack: SupervisedStack, fault_run) -> tuple[str, ...]:
    """A plain link, one with a visit limit and one with a password, each
    visited, and a path no link has; every click stored. Returns their slugs."""
    edge, token = stack.ports["EDGE_PORT"], fault_run.token
    slugs = ("kept", "limited", "locked")
    for body in (
        {"url": "https://example.com/kept", "slug": "kept"},
        {"url": "https://example.com/limited", "slug": "limited", "max_visits": 3},
        {"url": "https://example.com/locked", "slug": "locked", "password": "open sesame"},
    ):
        api(stack, "/api/v1/links", token, body=body)
    # Visited once in Redis: a visit before would leave a "no such link" in an edge worker's cache.
    published = redis.Redis(port=stack.ports["REDIS_PORT"], password=stack.secrets["REDIS_PASSWORD"])
    wait_until(
        lambda: published.exists(*(f"slingshot:link:{slug}" for slug in slugs)) == len(slugs),
        timeout=PATIENCE,
        what="the links published",
    )
    for _ in range(3):
        assert edge_visit(edge, "/kept")[0] == 302
    for _ in range(2):
        assert edge_visit(edge, "/limited")[0] == 302
    assert unlock(edge, "locked", "open sesame")[0] == 302
    assert edge_visit(edge, "/nobody-made-this")[0] == 404
    fault_run.wait_import_lag_zero()
    return slugs


def one_stats_range() -> str:
    """The query of the stats of one range, from a day ago to two hours on, the same before and after the restore."""
    now = int(time.time())
    return urllib.parse.urlencode(
        {"interval": "hour", "include_bots": "true", "from": iso_hour(now - 86400), "to": iso_hour(now + 7200)}
    )


def back_up(stack: SupervisedStack, folder: Path) -> None:
    """`make backup` with the edge stopped meanwhile: a folder for its owner
    alone, with every part and no secret in what it printed; the edge runs again."""
    status, told = make(stack, "backup", f"BACKUP_DIR={folder}", "BACKUP_ARGS=--stop-edge")
    assert status == 0, told
    assert "error" not in told.lower() and stack.secrets["SECRET_KEY"] not in told, told
    assert folder.stat().st_mode & 0o777 == 0o700
    assert {path.name for path in folder.iterdir()} >= {
        "postgres.dump",
        "redis.rdb",
        "secrets.env",
        "manifest.json",
    }
    assert all(path.stat().st_mode & 0o777 == 0o600 for path in folder.rglob("*") if path.is_file())
    wait_until(lambda: stack.info("edge")["statename"] == "RUNNING", timeout=30, what="the edge running again")


def restore_and_start(stack: SupervisedStack, restored: SupervisedStack, folder: Path) -> None:
    """`make restore` of the backup into the new run directory, then `make
    run` there: the same SECRET_KEY, a PostgreSQL password of its own."""
    status, told = make(restored, "restore", f"BACKUP={folder}")
    print(told)
    assert status == 0, told
    assert "error" not in told.lower() and "Traceback" not in told, told
    restored.start()
    wait_until(lambda: dashboard_answers(restored), timeout=PATIENCE, what="the restored dashboard")
    assert restored.secrets["SECRET_KEY"] == stack.secrets["SECRET_KEY"]
    assert restored.secrets["POSTGRES_PASSWORD"] != stack.secrets["POSTGRES_PASSWORD"]


def assert_what_clients_hold_works(
    restored: SupervisedStack, signature: str, session: urllib.request.OpenerDirector, before: dict
) -> None:
    """A YOURLS signature signing a timestamp, a session, the visit counter and a password's pass."""
    now = str(int(time.time()))
    timed = hashlib.md5((now + signature).encode()).hexdigest()
    assert yourls(restored, timestamp=now, signature=timed, action="db-stats") == before["yourls"]
    assert redirected_to(session, f"{restored.dashboard_url}/links/", timeout=PATIENCE) is None
    # The visit counter: one visit left of three.
    new_edge = restored.ports["EDGE_PORT"]
    assert edge_visit(new_edge, "/limited")[0] == 302
    assert edge_visit(new_edge, "/limited")[0] == 410
    assert unlock(new_edge, "locked", "open sesame")[0] == 302


def visit_every_link_again(restored: SupervisedStack, after: dict, before: dict) -> None:
    """Every link redirects where it did, and each of these clicks is stored."""
    new_edge = restored.ports["EDGE_PORT"]
    visited = {}
    for link in after["links"]:
        if link["max_visits"] is None and not link["has_password"]:
            status, headers, _ = edge_visit(new_edge, f"/{link['slug']}")
            assert (status, headers.get("Location")) == (link["redirect_status"], link["url"]), link
            visited[link["slug"]] = before["stored"][link["slug"]] + 1
    visited.update(limited=before["stored"]["limited"] + 1, locked=before["stored"]["locked"] + 1)
    wait_until(
        lambda: all(stored_clicks(restored)[slug] == count for slug, count in visited.items()),
        timeout=PATIENCE,
        what="the new clicks stored",
    )


def wait_for_each_hours_difference_as_before(restored: SupervisedStack, token: str, before: dict) -> None:
    """The new clicks are accounted for: served and stored went up alike."""
    differences = {hour["hour"]: hour["difference"] for hour in before["accounting"]}
    wait_until(
        lambda: all(
            hour["difference"] == differences.get(hour["hour"], 0) for hour in accounting_hours(restored, token)
        ),
        timeout=PATIENCE,
        interval=0.5,
        what="each hour's difference as before the restore",
    )


def test_a_backup_restored_into_a_new_run_directory_brings_back_every_link_click_count_token_and_session(
    stack, fault_run
):
    """`make backup` of the running stack (its edge stopped meanwhile), then
    `make restore` into a new run directory on other ports, and `make run`
    there: what clients read is the same, and what they hold (a token, a
    YOURLS signature, a session) works."""
    token = fault_run.token
    session = sign_in_a_keeper(stack)
    _, signature = stack.manage(
        "create_api_token", ADMIN, "--scope", "write", "--name", "yourls", "--signature"
    ).stdout.split()
    slugs = make_and_visit_three_links(stack, fault_run)
    stats_range = one_stats_range()
    before = state(stack, token, signature, slugs, stats_range)
    assert before["stored"]["kept"] == 3 and before["yourls"][0] == 200, before

    restored = SupervisedStack(Path(tempfile.mkdtemp(prefix="slingshot-restored-")), env=PATIENT_REDIS)
    restored.root.chmod(0o755)  # PostgreSQL runs as `postgres` when we are root
    folder = restored.root / "backup"
    try:
        back_up(stack, folder)
        restore_and_start(stack, restored, folder)
        after = state(restored, token, signature, slugs, stats_range)
        for part in before:
            assert after[part] == before[part], part
        # What clients hold: a token and a YOURLS signature (above, and signing a timestamp), a session.
        assert_what_clients_hold_works(restored, signature, session, before)
        visit_every_link_again(restored, after, before)
        wait_for_each_hours_difference_as_before(restored, token, before)
    finally:
        restored.cleanup()


def test_a_program_that_keeps_failing_to_start_is_left_fatal_and_reported(stack):
    rpc = stack.rpc()
    port = int(stack.secrets["REDIS_PORT"])
    rpc.supervisor.stopProcess("redis")
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", port))
    squatter.listen()
    try:
        rpc.supervisor.startProcess("redis", False)
        wait_until(lambda: stack.info("redis")["statename"] == "FATAL", timeout=60, what="redis FATAL")
        wait_until(lambda: "redis is FATAL" in stack.console(), timeout=10, what="the console's report")
    finally:
        squatter.close()
    report = next(line for line in stack.console().splitlines() if "redis is FATAL" in line)
    assert f"{stack.run}/logs/redis.log" in report and "make ctl ARGS='start redis'" in report
    assert "Address already in use" in (stack.run / "logs" / "redis.log").read_text()
    # What the report says to do, once the port is free again.
    result = subprocess.run(
        [sys.executable, "-m", "devstack", "ctl", "start", "redis"],
        cwd=devstack.REPO,
        env={**stack.env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert stack.info("redis")["statename"] == "RUNNING"


def test_ctrl_c_stops_everything_in_order_and_make_exits_0(stack):
    pids = {info["name"]: info["pid"] for info in stack.rpc().supervisor.getAllProcessInfo()}
    pids.update(nginx=stack.master_pid("edge"), gunicorn=stack.master_pid("dashboard"), front=stack.master_pid("front"))
    before = len(stack.console())
    stack.interrupt()
    assert stack.wait_exit(timeout=180) == 0

    console = stack.console()[before:]
    assert "Traceback" not in console, console
    assert "make: ***" not in console
    stopped = re.findall(r"INFO stopped: (\w+) \(exit status 0\)", console)
    assert tuple(name for name in stopped if name in STOP_ORDER) == STOP_ORDER, console[-3000:]
    assert "click flush at exit failed" not in console
    for name, pid in pids.items():
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"{name} (pid {pid}) still runs"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_stopped_stack_is_backed_up_with_its_own_servers_started_for_the_time_it_takes(stack):
    assert stack.exited()
    folder = stack.root / "stopped-backup"
    status, told = make(stack, "backup", f"BACKUP_DIR={folder}")
    assert status == 0, told
    assert "backing up the stopped stack" in told, told
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["stack"] == "stopped"
    assert manifest["files"]["postgres.dump"]["bytes"] > 10_000 and manifest["files"]["redis.rdb"]["bytes"] > 100
    # Its PostgreSQL and Redis have stopped again.
    for name in ("POSTGRES_PORT", "REDIS_PORT"):
        listen_on(stack.ports[name]).close()
    shutil.rmtree(folder)


def execute_while_stopped(stack: SupervisedStack, sql: str) -> None:
    """One statement in the stack's database, with the stack stopped."""
    if not stack.exited():
        stack.interrupt()
        stack.wait_exit(timeout=180)
    datadir, port = stack.run / "pg", int(stack.secrets["POSTGRES_PORT"])
    server = subprocess.Popen(
        postgres_command(datadir, port),
        cwd="/",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **db_owner(),
    )
    try:
        wait_for_postgres(datadir, port, process=server)
        with psycopg.connect(stack.secrets["DATABASE_URL"], autocommit=True) as conn:
            conn.execute(sql)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)


def test_a_run_directory_of_a_newer_version_is_refused_with_advice(stack):
    """A database migrated by a newer checkout (a migration this one does
    not know) stops `make run` with what to do instead; tests/test_upgrade.py
    has the way up from older versions."""
    execute_while_stopped(
        stack, "INSERT INTO django_migrations (app, name, applied) VALUES ('clicks', '0009_user_agent_model', now())"
    )
    result = subprocess.run(
        [sys.executable, "-m", "devstack", "prepare"],
        cwd=devstack.REPO,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output
    assert "migrated by a newer version of Slingshot" in output and "clicks.0009_user_agent_model" in output
    assert "restore the backup" in output


def listen_on(port: int) -> socket.socket:
    """Another program on the port."""
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", port))
    squatter.listen()
    return squatter


def prepare_again(stack: SupervisedStack, **env: str) -> subprocess.CompletedProcess:
    """`make run`'s preparation as a second start makes it: none of the port
    settings in the environment, unless given here."""
    return subprocess.run(
        [sys.executable, "-m", "devstack", "prepare"],
        cwd=devstack.REPO,
        env={**{name: value for name, value in stack.env.items() if name not in stack.ports}, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_ports_another_program_has_are_named_all_with_a_command_that_picks_free_ones(stack):
    execute_while_stopped(stack, "DELETE FROM django_migrations WHERE name = '0009_user_agent_model'")
    taken = ("DASHBOARD_PORT", "EDGE_TLS_PORT")
    squatters = [listen_on(stack.ports[name]) for name in taken]
    try:
        result = prepare_again(stack)
    finally:
        for squatter in squatters:
            squatter.close()
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    assert ", ".join(f"{name}={stack.ports[name]}" for name in taken) in output, output
    command = re.search(r"^ +DASHBOARD_PORT=(\d+) EDGE_TLS_PORT=(\d+) make run$", output, re.M)
    assert command, output
    suggested = [int(port) for port in command.groups()]
    assert not set(suggested) & set(stack.ports.values())
    for port in suggested:  # free indeed
        listen_on(port).close()


def test_a_port_given_again_wins_says_so_and_the_run_directory_keeps_it(stack):
    before, moved = stack.ports["EDGE_PORT"], free_port()
    result = prepare_again(stack, EDGE_PORT=str(moved))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"EDGE_PORT={moved} from the environment, in place of {before} that the run directory had" in result.stdout
    assert stack.secrets["EDGE_PORT"] == str(moved)
    # From now on the stack starts as a second `make run` starts it, without the port settings.
    stack.env = {name: value for name, value in stack.env.items() if name not in stack.ports}
    stack.ports["EDGE_PORT"] = moved


def test_when_supervisord_itself_dies_its_programs_are_stopped_in_order(stack):
    before = len(stack.console())
    stack.start()
    # Started without a port setting: on the ports its run directory keeps.
    wait_until(lambda: "Ctrl-C stops everything" in stack.console()[before:], timeout=30, what="the banner")
    banner = stack.console()[before:]
    assert f"http://127.0.0.1:{stack.ports['DASHBOARD_PORT']}/" in banner
    assert f"http://127.0.0.1:{stack.ports['EDGE_PORT']}/<slug>" in banner
    assert "Sign in as:   ops. Lost its password?" in banner  # shown on the first start only
    assert urllib.request.urlopen(f"{stack.dashboard_url}/healthz", timeout=10).status == 200
    # Every program up (one started again after a slow start has no process for a moment).
    # No wait after that: the runner finds the programs supervisord left where they are,
    # not from supervisord's last answer, which missed one started again since.
    wait_until(
        lambda: all(info["statename"] == "RUNNING" for info in stack.rpc().supervisor.getAllProcessInfo()),
        timeout=60,
        what="every program running",
    )
    # And one started again as supervisord dies: the runner, which asks supervisord
    # for the programs' pids once a second, has not heard of its new one.
    stack.rpc().supervisor.stopProcess("webhooks")
    stack.rpc().supervisor.startProcess("webhooks", False)
    pids = {info["name"]: info["pid"] for info in stack.rpc().supervisor.getAllProcessInfo()}
    pids.update(nginx=stack.master_pid("edge"), gunicorn=stack.master_pid("dashboard"), front=stack.master_pid("front"))
    supervisord = int((stack.run / "supervisord.pid").read_text())
    before = len(stack.console())
    os.kill(supervisord, signal.SIGKILL)
    assert stack.wait_exit(timeout=180) == 2  # make's status for a recipe that failed

    console = stack.console()[before:]
    assert "supervisord exited unexpectedly" in console
    # The edge before Redis: its workers' clicks reach Redis. (The console, whose
    # events came from supervisord, has ended by itself; a program that wrote to
    # supervisord since, webhooks as it starts, ended with its broken pipe.)
    stopped = re.findall(r"devstack: (?:stopped (\w+) \(pid|(\w+) \(pid \d+\) had exited already)", console)
    assert tuple("".join(name) for name in stopped if "console" not in name) == STOP_ORDER, console
    for name, pid in pids.items():
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"{name} (pid {pid}) still runs"


def test_when_its_terminal_closes_everything_is_stopped_in_order(stack):
    """A closed terminal window, or a dropped SSH session: `make run` is gone
    with it, and so is every program, in order, with nothing left running."""
    stack.start()
    wait_until(stack.all_running, timeout=60, what="every program running")
    pids = {info["name"]: info["pid"] for info in stack.rpc().supervisor.getAllProcessInfo()}
    pids.update(nginx=stack.master_pid("edge"), gunicorn=stack.master_pid("dashboard"), front=stack.master_pid("front"))
    pids.update(make=stack.pid, supervisord=int((stack.run / "supervisord.pid").read_text()))
    log = stack.run / "logs" / "supervisord.log"
    logged = len(log.read_text())
    stack.hang_up()
    stack.wait_exit(timeout=180)
    wait_until(lambda: not Path(f"/proc/{pids['supervisord']}").exists(), timeout=60, what="supervisord to exit")
    since = log.read_text()[logged:]
    assert "received SIGTERM indicating exit request" in since, since  # asked by the runner, as Ctrl-C asks
    stopped = re.findall(r"INFO stopped: (\w+) \(exit status 0\)", since)
    assert tuple(name for name in stopped if name in STOP_ORDER) == STOP_ORDER, since
    for name, pid in pids.items():
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"{name} (pid {pid}) still runs"


def test_the_console_prints_whole_lines_with_the_program_in_front(tmp_path):
    out = tmp_path / "out.txt"
    with out.open("w") as stream:
        console = Console(out=stream, logs_dir="/run/logs")
        console.output("importer", "stdout", "gr\u00fc".encode()[:-1])  # cut inside a character
        console.output("importer", "stdout", "gr\u00fc".encode()[-1:] + b"n\nnext")
        console.output("edge", "stdout", b"other\n")
        console.state("PROCESS_STATE_EXITED", {"processname": "importer", "expected": "0", "pid": "7"})
        console.state("PROCESS_STATE_FATAL", {"processname": "edge"})
    lines = [line.split(" ", 1)[1] for line in out.read_text().splitlines()]
    assert lines[0] == "importer   | gr\u00fcn"
    assert lines[1] == "edge       | other"
    assert lines[2] == "importer   | next"  # the unfinished line, printed when its program exits
    assert "importer (pid 7) exited unexpectedly" in lines[3] and "/run/logs/importer.log" in lines[3]
    assert "edge is FATAL" in lines[4] and "make ctl ARGS='start edge'" in lines[4]

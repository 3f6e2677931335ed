"""An upgrade keeps everything: a stack made by an older version's own
`make run` (a git worktree of its commit, with its own virtualenv), filled
through that version (people, tokens, links, clicks, orphan visits, and
clicks the old edge left in the stream for the importer), stopped with
Ctrl-C, then started by this checkout's `make run` on the same run
directory. Every person, token, link, click, rollup and orphan visit is
kept and served, a person signed in stays signed in, every program runs,
the next click is stored, and the database's schema is the one a new
install gets. An old edge with a click journal is killed while Redis
refuses it, so that this version's edge finds clicks and their served
counts in journals of the old format, and sends them: stored once, and the
accounting of every hour comes out even (from 1.0.0, whose edge counts in
its journal).

The versions are the databases an operator may have: main before release
1.0.0 rewrote its first migrations in place (00bccb7, 2026-11-23, and main
as 1.0.0 was cut, 3fdb8fd); each release from 1.0.0 on joins this list
(docs/releasing.md). `pytest -s` prints what each step took."""

import html
import http.client
import importlib.metadata
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.parse
from pathlib import Path

import psycopg
import pytest
import redis

import devstack
from devstack.net import wait_for_answer
from devstack.supervised import PATIENT_REDIS, SupervisedStack, redirected_to, sign_in, wait_until
from links.unlocking import LinkPasswordHasher
from loadtest.scenarios.visitors import request, settled_accounting
from testing.schema import schema_of

pytestmark = pytest.mark.slow  # old versions' stacks, upgraded: `make test-fast` leaves it out

OLD_VERSIONS = {
    "main-2026-11-23": "00bccb7",
    "main-2026-11-26": "3fdb8fd",
    "1.0.0": "baf5878",
    "1.1.0": "add4373",
}
ADMIN = "ops"
CLICKS = {"plain": 7, "moved": 4, "later": 3}  # visits made through the old edge, imported by the old importer
IN_FLIGHT = 5  # visits of "plain" the old importer never took: in the stream at the upgrade
SPOOLED = 4  # visits of "plain" an old edge served into its click journal while Redis refused it
ORPHANS = 6
BO_PASSWORD = "bo-password-1234"
LOCKED_PASSWORD = "open sesame"  # of the link "locked", in versions whose links have passwords
HUMAN = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(devstack.REPO), *args], check=True, capture_output=True, text=True, timeout=120
    ).stdout


@pytest.fixture(scope="module")
def checkouts():
    """Worktrees of the old versions, made on first use, removed at the end."""
    made: dict[str, Path] = {}
    root = Path(tempfile.mkdtemp(prefix="slingshot-old-"))

    def checkout(commit: str) -> Path:
        if commit not in made:
            path = root / commit
            git("worktree", "add", "--detach", str(path), commit)
            made[commit] = path
            _install(path)
        return made[commit]

    yield checkout
    for path in made.values():
        git("worktree", "remove", "--force", str(path))
    shutil.rmtree(root, ignore_errors=True)


def _install(path: Path) -> None:
    """What the old version's bin/setup would make, from what this checkout has.

    Every package the old version pins, at the version it pins: this
    checkout's virtualenv has most of them, often all (a version pins
    fewer packages than the next, rarely other versions of them). With all
    of them it is the old version's too; else the old version gets a
    virtualenv of its own that sees this one's packages after its own, and
    holds only those it pins that this one lacks or has at another version,
    as pip freeze listed them, dependencies included (pip would take most of
    a minute per version to install the rest again)."""
    pins = _pins(path / "requirements.txt")
    if pins is None:  # not a pip freeze: the old way, every package
        subprocess.run([sys.executable, "-m", "venv", str(path / ".venv")], check=True, timeout=120)
        subprocess.run(
            [str(path / ".venv" / "bin" / "pip"), "install", "--quiet", "-r", str(path / "requirements.txt")],
            check=True,
            timeout=900,
        )
    else:
        missing = [f"{name}=={version}" for name, version in pins.items() if _installed(name) != version]
        if not missing:
            (path / ".venv").symlink_to(devstack.REPO / ".venv")
        else:
            venv = path / ".venv"
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
            version = f"python{sys.version_info.major}.{sys.version_info.minor}"
            site_packages = venv / "lib" / version / "site-packages"
            ours = {str(Path(sysconfig.get_path(kind)).resolve()) for kind in ("purelib", "platlib")}
            (site_packages / "slingshot-shared.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site_packages)]
                + missing,
                check=True,
                timeout=900,
            )
    for shared in ("dashboard/frontend/build", "data/geo/node_modules"):
        if (devstack.REPO / shared).exists() and (path / shared).parent.exists() and not (path / shared).exists():
            (path / shared).symlink_to(devstack.REPO / shared)
    # As this checkout's bin/setup does for its own: where Python writes no
    # bytecode (PYTHONDONTWRITEBYTECODE), each of the old stack's processes
    # would compile every module of the old version it imports.
    folders = [name for name in ("dashboard", "devstack", "edge") if (path / name).is_dir()]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", "-x", "node_modules", *folders],
        cwd=path,
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=300,
    )


def _pins(requirements: Path) -> dict[str, str] | None:
    """name -> version of a pip freeze (requirements.txt); None if a line is
    anything else."""
    pins = {}
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        found = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;=]+)", line)
        if not found:
            return None
        pins[found[1]] = found[2]
    return pins


def _installed(name: str) -> str | None:
    """The version of a package in this checkout's virtualenv, if there."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


class Stack:
    """One run directory, started by one checkout's `make run` after another."""

    def __init__(self, root: Path) -> None:
        self.supervised = SupervisedStack(
            root,
            env={**PATIENT_REDIS, "SLINGSHOT_ADMIN_USER": ADMIN, "SLINGSHOT_ADMIN_PASSWORD": secrets.token_urlsafe(16)},
        )

    def start(self, repo: Path) -> None:
        self.supervised.repo = repo
        self.supervised.start()

    def stop(self) -> None:
        self.supervised.interrupt()
        assert self.supervised.wait_exit(timeout=180) == 0, self.supervised.console()[-3000:]

    def manage(self, repo: Path, *args: str) -> str:
        env = {**self.supervised.env, "SLINGSHOT_ENV_FILE": str(self.supervised.run / "env")}
        python = repo / ".venv" / "bin" / "python"
        done = subprocess.run(
            [str(python), str(repo / "dashboard" / "manage.py"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    def sql(self, statement: str, params=None) -> list[tuple]:
        with psycopg.connect(self.supervised.secrets["DATABASE_URL"], connect_timeout=5) as conn:
            return conn.execute(statement, params).fetchall()

    def api(self, method: str, path: str, token: str, body: dict | None = None) -> tuple[int, object]:
        status, raw = request(self.supervised.ports["DASHBOARD_PORT"], path, method=method, body=body, token=token)
        return status, json.loads(raw) if raw else None

    def visit(self, path: str, *, agent: str = HUMAN) -> tuple[int, str]:
        status, headers, _ = self.page(path, agent=agent)
        return status, headers.get("Location", "")

    def page(
        self, path: str, *, agent: str = HUMAN, form: dict | None = None, cookie: str = ""
    ) -> tuple[int, http.client.HTTPMessage, str]:
        """A visit to the edge (a POST of `form` when given): status, headers, body."""
        headers = {"User-Agent": agent, "Referer": "https://news.example/item"}
        if form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if cookie:
            headers["Cookie"] = cookie
        conn = http.client.HTTPConnection("127.0.0.1", self.supervised.ports["EDGE_PORT"], timeout=10)
        try:
            body = urllib.parse.urlencode(form) if form is not None else None
            conn.request("GET" if form is None else "POST", path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.headers, response.read().decode()
        finally:
            conn.close()

    def published(self, slug: str) -> bool:
        secrets = self.supervised.secrets
        client = redis.Redis(port=int(secrets["REDIS_PORT"]), password=secrets["REDIS_PASSWORD"])
        try:
            return bool(client.exists(f"slingshot:link:{slug}"))
        finally:
            client.close()

    def clicks_by_slug(self) -> dict[str, int]:
        return dict(
            self.sql(
                "SELECT l.slug, count(c.*) FROM links_link l LEFT JOIN clicks c ON c.link_id = l.id GROUP BY l.slug"
            )
        )

    def everything(self) -> dict:
        """What an upgrade must keep, as rows."""
        return {
            "people": self.sql("SELECT id, username, password, is_superuser, email FROM auth_user ORDER BY id"),
            "tokens": self.sql("SELECT id, user_id, digest, scope, name FROM api_apitoken ORDER BY id"),
            "links": self.sql(
                "SELECT id, slug, url, title, tags, redirect_status, expires_at, forward_query, is_active, owner_id"
                " FROM links_link ORDER BY id"
            ),
            "clicks": self.sql(
                "SELECT click_id, occurred_at, link_id, slug, ip, user_agent_id, is_bot, country, browser, os,"
                " device, referer, referer_host FROM clicks ORDER BY click_id"
            ),
            "rollups": self.sql("SELECT * FROM click_rollup_hour ORDER BY link_id, bucket"),
            "breakdowns": self.sql(
                "SELECT link_id, bucket, dimension, value, clicks, human_clicks FROM click_breakdown_hour"
                " ORDER BY 1, 2, 3, 4"
            ),
            "totals": self.sql("SELECT * FROM link_click_totals ORDER BY link_id"),
            "orphans": self.sql(
                "SELECT click_id, occurred_at, slug, ip, country, user_agent, referer FROM orphan_visits ORDER BY 1"
            ),
        }


def _timed(what: str, started: float) -> None:
    print(f"  {what}: {time.monotonic() - started:.1f} s", flush=True)


@pytest.mark.parametrize("version", list(OLD_VERSIONS))
def test_an_upgrade_from_an_older_version_keeps_and_serves_everything(version, checkouts):
    started = time.monotonic()
    old = checkouts(OLD_VERSIONS[version])
    _timed(f"checkout of {version} ({OLD_VERSIONS[version]})", started)
    root = Path(tempfile.mkdtemp(prefix="slingshot-upgrade-"))
    stack = Stack(root)
    try:
        started = time.monotonic()
        stack.start(old)
        _restart_an_old_edge_that_lost_a_journal(stack)
        _timed("the old stack started", started)
        tokens, links = _fill_through_old_version(stack, old)
        session = sign_in(stack.supervised, "bo", BO_PASSWORD)
        assert session is not None, "bo could not sign in to the old version"
        before = stack.everything()
        waiting = IN_FLIGHT
        journals = (old / "edge" / "slingshot" / "journal.lua").exists()  # an old edge that keeps click journals
        if journals:
            waiting += _leave_clicks_in_the_old_edges_journals(stack)
        stack.stop()

        started = time.monotonic()
        stack.start(devstack.REPO)
        _timed("this version started on the old run directory", started)
        assert "Slingshot" in stack.manage(devstack.REPO, "slingshot_version")
        _check_everything_kept(stack, before, links, waiting)
        _check_everything_served(stack, tokens, links, waiting)
        if "locked" in links:
            _check_the_password_link_asks_for_it(stack)
        # bo's session of the old version is theirs still: their links page, not the sign-in page.
        assert redirected_to(session, f"{stack.supervised.dashboard_url}/links/") is None
        if journals:
            # An edge before the journal counted in its memory, and could send
            # a count twice when Redis was slow (3fdb8fd: two flushes racing
            # over the pending counts, 10 served over stored under a disk
            # busy with other writes), which no upgrade can undo: the
            # accounting holds from 1.0.0 on.
            _check_the_accounting_is_even(stack, tokens["admin"])
        _check_the_schema_is_a_new_installs(stack)
    except BaseException:
        # The programs' logs go with the run directory: what they said is shown with the failure.
        for log in sorted((stack.supervised.run / "logs").glob("*.log")):
            print(f"--- {log.name}, its end:\n{log.read_text(errors='replace')[-4000:]}")
        raise
    finally:
        stack.supervised.cleanup(remove=False)
        shutil.rmtree(root, ignore_errors=True)


def _restart_an_old_edge_that_lost_a_journal(stack: Stack) -> None:
    """Releases before 10eb38c (all four old versions here) have a start
    race: a worker's scan could remove the journal a sibling was making, in
    the instant before the sibling locked it, and that worker then dropped
    every click until nginx restarted (CHANGELOG 1.1.1). It hit about one
    start in fifty. An operator restarts such an edge, and so does this
    test: the old release's bug, fixed since, is not what an upgrade is
    tested for."""
    log = stack.supervised.run / "logs" / "edge.log"
    for _ in range(3):
        text = log.read_text(errors="replace") if log.exists() else ""
        if "clicks will be dropped: no click journal" not in text:
            return
        log.write_text("")  # nginx appends (O_APPEND): what the next start says is all that is left
        rpc = stack.supervised.rpc()
        rpc.supervisor.stopProcess("edge")
        rpc.supervisor.startProcess("edge")
        assert wait_for_answer(int(stack.supervised.ports["EDGE_PORT"]), timeout=30) == 200
    raise AssertionError(f"the old edge lost a worker's journal at three starts running:\n{text[-2000:]}")


def _fill_through_old_version(stack: Stack, old: Path) -> tuple[dict, dict]:
    admin_token = stack.manage(old, "create_api_token", ADMIN, "--scope", "write", "--name", "admin's").strip()
    stack.manage(
        old,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model;"
        f"get_user_model().objects.create_user('bo', 'bo@example.com', '{BO_PASSWORD}')",
    )
    bo_token = stack.manage(old, "create_api_token", "bo", "--scope", "write", "--name", "bo's").strip()
    bo_read = stack.manage(old, "create_api_token", "bo", "--scope", "read", "--name", "bo's reader").strip()
    links = {
        "plain": ({"url": "https://example.com/plain", "slug": "plain", "title": "Plain", "tags": ["a", "b"]}, ADMIN),
        "moved": (
            {"url": "https://example.com/moved?x=1", "slug": "moved", "redirect_status": 301, "forward_query": True},
            ADMIN,
        ),
        "later": (
            {"url": "https://example.org/later", "slug": "later", "expires_at": "2031-01-01T00:00:00Z"},
            "bo",
        ),
    }
    if (old / "dashboard" / "links" / "unlocking.py").exists():
        links["locked"] = ({"url": "https://example.com/locked", "slug": "locked", "password": LOCKED_PASSWORD}, ADMIN)
    for slug, (body, owner) in links.items():
        status, reply = stack.api("POST", "/api/v1/links", admin_token if owner == ADMIN else bo_token, body)
        assert status == 201, (slug, reply)
    wait_until(lambda: stack.published("later"), timeout=30, what="the old publisher to publish")
    for slug, count in CLICKS.items():
        for n in range(count):
            assert stack.visit(f"/{slug}", agent=HUMAN if n % 2 else "curl/8.5")[0] in (301, 302)
    for n in range(ORPHANS):
        assert stack.visit(f"/nothing-{n % 2}")[0] == 404
    expected = {**dict.fromkeys(links, 0), **CLICKS}
    wait_until(lambda: stack.clicks_by_slug() == expected, timeout=60, what="the old importer to store the clicks")
    # The importer stops; what the edge serves next waits in the stream for the new version.
    stack.supervised.rpc().supervisor.stopProcess("importer")
    for _ in range(IN_FLIGHT):
        assert stack.visit("/plain")[0] == 302
    return {"admin": admin_token, "bo": bo_token, "bo-read": bo_read}, links


def _leave_clicks_in_the_old_edges_journals(stack: Stack) -> int:
    """Redis refuses the old edge (another password for a while, every
    connection dropped), which serves SPOOLED visits of "plain" from its
    cache into its click journals; then nginx is killed, master and workers
    (SIGKILL). Those clicks and their served counts stay in journals of the
    old version's format: an edge supervisord starts again in its place
    cannot send them either, nor can its flush at the Ctrl-C that follows.
    Returns how many clicks wait there."""
    env = stack.supervised.secrets
    client = redis.Redis(port=int(env["REDIS_PORT"]), password=env["REDIS_PASSWORD"])
    try:
        # Not written to Redis's configuration file: the new version's Redis starts with its own.
        client.config_set("requirepass", secrets.token_urlsafe(16))
        client.client_kill_filter(_type="normal", skipme=True)
        # A worker that has not cached the link cannot read it now: 503, and no click.
        answers = []
        while answers.count(302) < SPOOLED and len(answers) < 200:
            answers.append(stack.visit("/plain")[0])
        assert answers.count(302) == SPOOLED and set(answers) <= {302, 503}, answers
        os.killpg(stack.supervised.master_pid("edge"), signal.SIGKILL)
    finally:
        client.close()
    return SPOOLED


def _check_everything_kept(stack: Stack, before: dict, links: dict, waiting: int) -> None:
    """`waiting`: the clicks of "plain" the old version served and did not store."""
    expected = {**dict.fromkeys(links, 0), **CLICKS, "plain": CLICKS["plain"] + waiting}
    wait_until(lambda: stack.clicks_by_slug() == expected, timeout=60, what="the waiting clicks to be stored")
    after = stack.everything()
    assert after["people"] == before["people"]
    assert after["tokens"] == before["tokens"]
    assert after["links"] == before["links"]
    old_ids = {row[0] for row in before["clicks"]}
    assert [row for row in after["clicks"] if row[0] in old_ids] == before["clicks"]
    assert len(after["clicks"]) == len(before["clicks"]) + waiting
    assert after["orphans"] == before["orphans"] and len(before["orphans"]) == ORPHANS
    # The rollups and totals of the old clicks, plus the waiting ones, and nothing else.
    plain = next(row[0] for row in after["links"] if row[1] == "plain")
    assert sum(row[2] for row in after["rollups"]) == sum(row[2] for row in before["rollups"]) + waiting
    assert [row for row in after["rollups"] if row[0] != plain] == [row for row in before["rollups"] if row[0] != plain]
    assert [row for row in after["totals"] if row[0] != plain] == [row for row in before["totals"] if row[0] != plain]
    totals = {row[0]: row[1] for row in after["totals"]}
    assert totals[plain] == expected["plain"]
    # Each person's links are in their personal team, and each token acts in it.
    teams = dict(stack.sql("SELECT personal_for_id, id FROM teams_team WHERE personal_for_id IS NOT NULL"))
    owners = dict(stack.sql("SELECT slug, owner_id FROM links_link"))
    for slug, team in stack.sql("SELECT slug, team_id FROM links_link"):
        assert team == teams[owners[slug]], slug
    for user, team in stack.sql("SELECT user_id, team_id FROM api_apitoken"):
        assert team == teams[user]
    # The orphan visits of before had no kind: visits of unknown slugs, on the default domain.
    assert stack.sql("SELECT DISTINCT kind, domain FROM orphan_visits") == [("unknown", "")]


def _check_everything_served(stack: Stack, tokens: dict, links: dict, waiting: int) -> None:
    # The tokens of before, in the API of now, each within its person's team.
    status, mine = stack.api("GET", "/api/v1/links", tokens["admin"])
    assert status == 200, mine
    assert sorted(link["slug"] for link in mine["results"]) == sorted(
        slug for slug, (_, owner) in links.items() if owner == ADMIN
    )
    status, theirs = stack.api("GET", "/api/v1/links", tokens["bo-read"])
    assert status == 200 and [link["slug"] for link in theirs["results"]] == ["later"]
    assert stack.api("POST", "/api/v1/links", tokens["bo-read"], {"url": "https://example.com/"})[0] == 403
    status, plain = stack.api("GET", "/api/v1/links/plain", tokens["admin"])
    assert status == 200 and plain["clicks"] == CLICKS["plain"] + waiting, plain
    # Every link redirects as it did.
    assert stack.visit("/plain") == (302, "https://example.com/plain")
    assert stack.visit("/moved?utm=1") == (301, "https://example.com/moved?x=1&utm=1")
    assert stack.visit("/later") == (302, "https://example.org/later")
    # For 5 s after Redis last failed it (the edge may have started before
    # Redis listened), the edge answers a slug Redis lacks 503, as it may be
    # a link not delivered yet (linklookup.lua, DOUBT_SECONDS); then 404.
    answers = [stack.visit("/nothing-0")[0]]
    while answers[-1] == 503 and len(answers) < 40:
        time.sleep(0.25)
        answers.append(stack.visit("/nothing-0")[0])
    assert answers[-1] == 404 and set(answers[:-1]) <= {503}, answers
    # The next click is stored, and the publisher delivers a new link.
    wait_until(
        lambda: stack.clicks_by_slug()["plain"] == CLICKS["plain"] + waiting + 1,
        timeout=60,
        what="the next click to be stored",
    )
    status, created = stack.api(
        "POST", "/api/v1/links", tokens["admin"], {"url": "https://example.net/", "slug": "after-upgrade"}
    )
    assert status == 201, created
    wait_until(lambda: stack.visit("/after-upgrade")[0] == 302, timeout=30, what="a new link to be served")
    running = {info["name"]: info["statename"] for info in stack.supervised.rpc().supervisor.getAllProcessInfo()}
    assert set(running.values()) == {"RUNNING"}, running


def _check_the_password_link_asks_for_it(stack: Stack) -> None:
    """The link given a password in the old version: this version's edge
    asks for it, never sends a visitor on without it, refuses a wrong one
    and lets the right one through (its page, then the link with the pass
    it sets), as edge/t/test_unlock.py has it for a link of its own."""
    status, headers, page = stack.page("/locked")
    assert status == 200 and "Location" not in headers, (status, headers)
    (action,) = re.findall(r'<form method="post" action="([^"]+)"', page)
    (kept,) = re.findall(r'name="ref" value="([^"]*)"', page)
    assert action == "/locked"
    form = {"ref": html.unescape(kept)}
    assert stack.page("/locked", form={**form, "password": "not it"})[0] == 403
    # A password hashed before 1.0.0 (Django's 1,000,000 PBKDF2 iterations)
    # costs a whole second's budget of checks (links.unlocking.check_cost),
    # which the wrong one may just have taken: the visitor is asked to try
    # again in a second, as a person would, and then let through.
    for _ in range(3):
        status, headers, page = stack.page("/locked", form={**form, "password": LOCKED_PASSWORD})
        if status != 429 or "Too many passwords are being checked right now. Try again in 1 second." not in page:
            break
        time.sleep(1.1)
    assert status == 200 and '<meta http-equiv="refresh" content="0; url=/locked">' in page, (status, page[:1000])
    cookie = headers["Set-Cookie"].split(";")[0]
    status, headers, _ = stack.page("/locked", cookie=cookie)
    assert (status, headers.get("Location")) == (302, "https://example.com/locked")
    # The right password has it hashed as this version hashes link passwords, a check costing one.
    ((encoded,),) = stack.sql("SELECT password FROM links_link WHERE slug = 'locked'")
    assert encoded.startswith(f"pbkdf2_sha256${LinkPasswordHasher.iterations}$"), encoded


def _check_the_accounting_is_even(stack: Stack, token: str) -> None:
    """Every hour the old and the new edge served in: as many clicks stored
    as they counted served, the old journals' counts included."""
    found = settled_accounting(stack.supervised.ports["DASHBOARD_PORT"], token)
    assert found and set(found.values()) == {0}, f"served minus stored, by hour: {found}"


# --- the schema: an upgraded database against a new install ------------------------------


def _check_the_schema_is_a_new_installs(stack: Stack) -> None:
    run, port = stack.supervised.run, int(stack.supervised.secrets["POSTGRES_PORT"])
    superuser = {"host": str(run / "pg"), "port": port, "user": "postgres"}
    with psycopg.connect(dbname="postgres", autocommit=True, **superuser) as conn:
        conn.execute("DROP DATABASE IF EXISTS new_install")
        conn.execute("CREATE DATABASE new_install OWNER slingshot")
    url = re.sub(r"/slingshot$", "/new_install", stack.supervised.secrets["DATABASE_URL"])
    subprocess.run(
        [sys.executable, str(devstack.REPO / "dashboard" / "manage.py"), "migrate", "--no-input", "-v", "0"],
        env={**os.environ, **stack.supervised.secrets, "SLINGSHOT_ENV_FILE": "", "DATABASE_URL": url},
        check=True,
        timeout=300,
    )
    upgraded, new = (schema_of(database, **superuser) for database in ("slingshot", "new_install"))
    assert upgraded == new

"""How Slingshot's servers are started on one machine without Docker.

One place that knows how to run PostgreSQL, Redis, the edge nginx, the
dashboard and its front nginx, used by `make run` (devstack/stack.py puts
them under supervisord, whose programs are `python -m devstack PROGRAM`) and
by the test suites, which start their own throwaway copies on free ports.
"""

import contextlib
import ctypes
import http.client
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NGINX_MODULES = Path("/usr/share/nginx/modules")
DEBIAN_LUA_MODULES = ("ndk_http_module.so", "ngx_http_lua_module.so")
GEOIP2_MODULE = "ngx_http_geoip2_module.so"
# The country database the edge and the importer share (data/geo/package.json,
# installed by bin/setup); GEOIP_COUNTRY_DB names another.
GEO_COUNTRY_DB = REPO / "data" / "geo" / "country.mmdb"


def geo_country_db() -> Path:
    return Path(os.environ.get("GEOIP_COUNTRY_DB") or GEO_COUNTRY_DB)


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


# --- PostgreSQL -------------------------------------------------------------


def pg_bindir() -> Path:
    configured = os.environ.get("PG_BINDIR")
    if configured:
        return Path(configured)
    for version in ("17", "16", "15"):
        candidate = Path(f"/usr/lib/postgresql/{version}/bin")
        if (candidate / "postgres").exists():
            return candidate
    pg_config = shutil.which("pg_config")
    if pg_config:
        return Path(subprocess.check_output([pg_config, "--bindir"], text=True).strip())
    raise FileNotFoundError("PostgreSQL server binaries not found; set PG_BINDIR")


def db_owner() -> dict:
    """Popen arguments that run PostgreSQL's programs as `postgres` when we are
    root (the server refuses root). Signals then reach the server itself."""
    if os.geteuid() == 0:
        return {"user": "postgres", "group": "postgres", "extra_groups": []}
    return {}


def give_to_db_owner(path: Path) -> None:
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(path, owner.pw_uid, owner.pw_gid)


def init_postgres(datadir: Path) -> bool:
    """initdb on first use; returns True if it created the cluster."""
    if (datadir / "PG_VERSION").exists():
        return False
    datadir.mkdir(parents=True, exist_ok=True)
    datadir.chmod(0o700)
    give_to_db_owner(datadir)
    subprocess.run(
        [
            str(pg_bindir() / "initdb"),
            "-D",
            str(datadir),
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd="/",
        **db_owner(),
    )
    return True


def postgres_command(datadir: Path, port: int, *, durable: bool = True) -> list[str]:
    # The local socket trusts whoever can open it, so only the cluster's owner
    # (and root) may: unix_socket_permissions=0700. Applications use TCP with
    # a password.
    cmd = [
        str(pg_bindir() / "postgres"),
        "-D",
        str(datadir),
        "-p",
        str(port),
        "-k",
        str(datadir),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_permissions=0700",
    ]
    if not durable:  # throwaway test clusters
        cmd += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
    return cmd


def wait_for_postgres(
    datadir: Path, port: int, *, timeout: float = 60.0, process: subprocess.Popen | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"PostgreSQL exited with {process.returncode} before it was ready")
        result = subprocess.run(
            [str(pg_bindir() / "pg_isready"), "-h", str(datadir), "-p", str(port), "-U", "postgres", "-q"]
        )
        if result.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"PostgreSQL on port {port} not ready after {timeout}s")
        time.sleep(0.1)


def bootstrap_database(
    datadir: Path, port: int, *, role: str, password: str, database: str, createdb: bool = False
) -> None:
    """Creates the application's role (no superuser) and database, if missing."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(host=str(datadir), port=port, user="postgres", dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
        verb = "ALTER" if exists else "CREATE"
        conn.execute(
            sql.SQL(verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEROLE {} PASSWORD {}").format(
                sql.Identifier(role), sql.SQL("CREATEDB" if createdb else "NOCREATEDB"), sql.Literal(password)
            )
        )
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(role)))
    # Extensions need a superuser (sql/004_visitor_sketches.sql); template1
    # passes them on to databases made later, such as the tests' own.
    for dbname in ("template1", database):
        with psycopg.connect(host=str(datadir), port=port, user="postgres", dbname=dbname, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS hll")


# --- Redis --------------------------------------------------------------------


def redis_command(
    datadir: Path,
    port: int,
    *,
    password: str | None = None,
    durable: bool = True,
    appendfsync: str = "everysec",
    extra: tuple[str, ...] = (),
) -> list[str]:
    """Writes datadir/redis.conf (mode 0600: it holds the password, which
    therefore never shows in `ps`) and returns the command that uses it.

    With appendfsync "everysec" a write Redis has acknowledged can still be
    lost, up to about a second of them, if the machine stops or Redis is
    killed while an fsync is late; "always" fsyncs before acknowledging
    (the local stack, devstack/programs.py)."""
    datadir.mkdir(parents=True, exist_ok=True)
    lines = [
        f"port {port}",
        "bind 127.0.0.1",
        f'dir "{datadir}"',
        'save ""',
        "daemonize no",
        "loglevel warning",
        # Clicks not yet imported live only here: AOF keeps them across a restart.
        "appendonly yes" if durable else "appendonly no",
        f"appendfsync {appendfsync}",
    ]
    if password:
        lines.append(f"requirepass {password}")
    lines += extra
    conf = datadir / "redis.conf"
    conf.touch(mode=0o600)
    conf.write_text("\n".join(lines) + "\n")
    return [shutil.which("redis-server") or "redis-server", str(conf)]


def redis_calls(client, command: str) -> int:
    """How many times Redis has run `command` (a lower-case name) since it
    started, from INFO commandstats, through a redis-py client."""
    return client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)


# --- the dashboard ---------------------------------------------------------------


def gunicorn_command(
    port: int, *, workers: int | str = 2, python: str | None = None, control_socket: Path | None = None
) -> list[str]:
    """The dashboard under gunicorn on 127.0.0.1:port, as `make run` starts it.

    gunicorn's control socket defaults to one path in the home directory,
    which every gunicorn on the machine would share: it goes where asked
    (the local stack's run directory), or nowhere."""
    import sys

    control = ["--control-socket", str(control_socket)] if control_socket else ["--no-control-socket"]
    return [
        python or sys.executable,
        "-m",
        "gunicorn",
        "slingshot.wsgi",
        "--chdir",
        str(REPO / "dashboard"),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        *control,
    ]


# --- the edge (nginx + Lua) -------------------------------------------------


def nginx_binary() -> str:
    return os.environ.get("NGINX_BIN") or shutil.which("openresty") or shutil.which("nginx") or "/usr/sbin/nginx"


def make_certificate(directory: Path, name: str, *, hosts: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A self-signed certificate and its key, `<name>.crt` and `<name>.key`
    in `directory`, for `hosts` (its subject alternative names), made with
    the openssl command; kept when they are there already. The key is
    readable by nginx's workers only."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    if not (cert.exists() and key.exists()):
        names = hosts or ("localhost",)
        san = ",".join(f"IP:{host}" if re.fullmatch(r"[\d.]+|[\da-f:]+", host) else f"DNS:{host}" for host in names)
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            + ["-days", "825", "-subj", f"/CN={names[0]}", "-addext", f"subjectAltName={san}"]
            + ["-keyout", str(key), "-out", str(cert)],
            check=True,
            capture_output=True,
        )
        give_key_to_edge(key)
    return cert, key


def give_key_to_edge(key: Path) -> None:
    """A certificate's key readable by nginx's workers alone."""
    key.chmod(0o600)
    if os.geteuid() == 0:
        # nginx started as root runs its workers as nobody, and they read
        # the certificates of the domains (edge/slingshot/certs.lua).
        os.chown(key, pwd.getpwnam("nobody").pw_uid, -1)


def render_edge_conf(
    prefix: Path,
    port: int,
    *,
    tls_port: int | None = None,
    listen_host: str = "127.0.0.1",
    real_ip_from: str | None = None,
    repo: Path = REPO,
) -> Path:
    """Prepares an nginx prefix for the top-level nginx.conf on this machine
    (of `repo`, a checkout: its nginx.conf and edge/).

    The differences from OpenResty stay here: Debian builds ngx_lua as a
    dynamic module, so its load_module lines come first; and the ports are
    the ones asked for instead of the container's 8080 and 8443 (a free one
    for HTTPS when none is asked for). The certificate folder, conf/certs,
    gets a self-signed default certificate unless it has one. Where the
    geoip2 module and the country database are installed,
    conf/edge-geoip2.conf defines $slingshot_country (nginx.conf includes
    it), which country rules read. `real_ip_from` (a CIDR, for tests and
    `make run`) makes the edge take the client's address from
    X-Forwarded-For when the request comes from there (conf/edge-realip.conf),
    so that tests can be visitors from anywhere.
    """
    _nginx_prefix(prefix)
    make_certificate(prefix / "conf" / "certs", "default")
    edge_link = prefix / "edge"
    if edge_link.is_symlink() or edge_link.exists():
        edge_link.unlink()
    edge_link.symlink_to(repo / "edge")
    conf = _rewritten(
        repo / "nginx.conf",
        {
            "listen 8080": f"listen {listen_host}:{port}",
            "listen 8443 ssl": f"listen {listen_host}:{tls_port or free_port()} ssl",
        },
    )
    modules = "".join(
        f"load_module {NGINX_MODULES / name};\n" for name in DEBIAN_LUA_MODULES if (NGINX_MODULES / name).exists()
    )
    country_db = geo_country_db()
    geoip2 = prefix / "conf" / "edge-geoip2.conf"
    if (NGINX_MODULES / GEOIP2_MODULE).exists() and country_db.exists():
        modules += f"load_module {NGINX_MODULES / GEOIP2_MODULE};\n"
        geoip2.write_text(
            f"geoip2 {country_db.resolve()} {{\n    $slingshot_country source=$remote_addr country_code;\n}}\n"
        )
    else:
        geoip2.unlink(missing_ok=True)
    realip = prefix / "conf" / "edge-realip.conf"
    if real_ip_from:
        realip.write_text(f"set_real_ip_from {real_ip_from};\nreal_ip_header X-Forwarded-For;\n")
    else:
        realip.unlink(missing_ok=True)
    path = prefix / "conf" / "nginx.conf"
    path.write_text(modules + conf)
    return path


def edge_command(prefix: Path, *, workers: int | str = 2) -> list[str]:
    return nginx_command(prefix, f"worker_processes {workers};")


def render_front_conf(
    prefix: Path, port: int, *, gunicorn_port: int, listen_host: str = "127.0.0.1", repo: Path = REPO
) -> Path:
    """Prepares an nginx prefix for the dashboard's front, dashboard/nginx.conf
    of `repo`, on this machine: listening on listen_host:port, and passing
    requests to gunicorn on 127.0.0.1:gunicorn_port in place of the Compose
    service it names."""
    _nginx_prefix(prefix)
    conf = _rewritten(
        repo / "dashboard" / "nginx.conf",
        {
            "listen 8000;": f"listen {listen_host}:{port};",
            "set $slingshot_gunicorn http://dashboard:8000;": f"set $slingshot_gunicorn http://127.0.0.1:{gunicorn_port};",
        },
    )
    path = prefix / "conf" / "nginx.conf"
    path.write_text(conf)
    return path


def nginx_command(prefix: Path, *directives: str) -> list[str]:
    """nginx in the foreground on prefix/conf/nginx.conf, with these
    main-context directives added."""
    return [
        nginx_binary(),
        "-p",
        f"{prefix}/",
        "-c",
        str(prefix / "conf" / "nginx.conf"),
        "-g",
        " ".join(("daemon off;", *directives)),
    ]


def _nginx_prefix(prefix: Path) -> None:
    for sub in ("conf", "logs"):
        (prefix / sub).mkdir(parents=True, exist_ok=True)


def _rewritten(path: Path, changes: dict[str, str]) -> str:
    """The text of the configuration file `path`, in which each key of
    `changes` that begins a line (after its indentation) is replaced by its
    value; each must begin exactly one line."""
    conf = path.read_text()
    for start, replacement in changes.items():
        conf, count = re.subn(rf"^(\s*){re.escape(start)}(?=[\s;]|$)", rf"\g<1>{replacement}", conf, flags=re.M)
        if count != 1:
            raise ValueError(f"{path.name} must have exactly one line that begins with {start!r}")
    return conf


# --- process groups ---------------------------------------------------------

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def die_with_parent(sig: int):
    """A preexec_fn: the child gets `sig` when the process that started it
    dies, so it is never left behind. Python runs preexec_fn after any
    user change (Popen's user=), which would otherwise clear the setting.
    Start such children from the main thread: the kernel sends the signal
    when the thread that forked them ends."""
    parent = os.getpid()

    def preexec() -> None:
        _prctl(PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # the parent died before prctl ran
            os.kill(os.getpid(), sig)

    return preexec


def become_subreaper() -> None:
    """Orphaned descendants (workers whose master died) become this
    process's children, so it can reap them."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group `pgid`, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def reap_children() -> None:
    """Collects exited children without waiting (a subreaper inherits them)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def finish_group(pgid: int, sig: int, *, timeout: float, log) -> bool:
    """Sends `sig` to what is left of process group `pgid` and waits until it
    has emptied; SIGKILL after `timeout` seconds. Returns False if it had to
    kill. `log` takes one line of text."""
    members = group_members(pgid)
    if not members:
        return True
    log(
        f"{len(members)} process(es) of group {pgid} still running ({', '.join(map(str, members))}): "
        f"sending {signal.Signals(sig).name} and waiting for them to finish"
    )
    started = time.monotonic()
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return True
    while group_members(pgid):
        reap_children()
        if time.monotonic() - started > timeout:
            log(f"group {pgid} still running after {timeout:.0f}s: killing it (SIGKILL)")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            return False
        time.sleep(0.02)
    reap_children()
    log(f"group {pgid} finished in {time.monotonic() - started:.2f}s")
    return True

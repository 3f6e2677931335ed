"""The nginx that `make bench` (loadtest/bench_edge.py) measures: the
production nginx.conf as devstack renders it, with beside it, where asked,
the ceiling servers (`return 302` with no Lua, over HTTP and HTTPS, and the
Lua floor), or with its clicks module swapped for one that records nothing.

The script puts the repository on sys.path before importing this module.
"""

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from procstat import children

from devstack.edge import edge_command, render_edge_conf
from devstack.net import free_port, wait_for_port

HERE = Path(__file__).resolve().parent
CEILING_TARGET = "https://example.com/landing"
LUA_FLOOR_PATH = "/lua-floor"
# Case (n)'s stand-in for the edge's clicks module, which records nothing.
NO_CLICKS = HERE / "noclick"
# The edge's metrics the benchmark reads around a run.
SERVED = 'slingshot_edge_requests_total{outcome="redirect"}'
LOOKUPS = "slingshot_edge_redis_lookups_total"


def without_clicks(conf: str) -> str:
    """nginx.conf (as render_edge_conf makes it) for an edge that serves as
    it does and records no click: NO_CLICKS first on its Lua path."""
    line = 'lua_package_path "$prefix/edge/?.lua;;";'
    if conf.count(line) != 1:
        raise ValueError(f"nginx.conf has not one {line!r}")
    return conf.replace(line, f'lua_package_path "{NO_CLICKS}/?.lua;$prefix/edge/?.lua;;";')


def ceiling_servers(port: int, tls_port: int) -> str:
    """The server blocks of the ceilings, on their own ports: `return 302`
    over HTTP (and the Lua floor at LUA_FLOOR_PATH) and over HTTPS."""
    return (
        "    server {\n"
        f"        listen 127.0.0.1:{port} reuseport;\n"
        '        add_header Cache-Control "private, no-store" always;\n'
        "        add_header X-Content-Type-Options nosniff always;\n"
        f"        location / {{ return 302 {CEILING_TARGET}; }}\n"
        f"        location = {LUA_FLOOR_PATH} {{\n"
        f'            content_by_lua_block {{ ngx.redirect("{CEILING_TARGET}", 302) }}\n'
        "        }\n"
        "    }\n"
        "    server {\n"
        f"        listen 127.0.0.1:{tls_port} ssl reuseport;\n"
        "        ssl_certificate certs/default.crt;\n"
        "        ssl_certificate_key certs/default.key;\n"
        "        ssl_protocols TLSv1.2 TLSv1.3;\n"
        '        add_header Cache-Control "private, no-store" always;\n'
        "        add_header X-Content-Type-Options nosniff always;\n"
        f"        location / {{ return 302 {CEILING_TARGET}; }}\n"
        "    }\n"
    )


class Nginx:
    """One nginx running the production nginx.conf as devstack renders it,
    plus (with_ceiling) a server on its own port that only does `return 302`,
    and at LUA_FLOOR_PATH only an ngx.redirect from Lua."""

    def __init__(
        self,
        root: Path,
        env: dict[str, str],
        workers: int,
        *,
        with_ceiling: bool,
        pin: bool,
        repo: Path,
        clicks: bool = True,
    ) -> None:
        prefix = root / f"nginx-{len(list(root.glob('nginx-*')))}"
        self.port, self.ceiling_port = free_port(), free_port()
        self.tls_port, self.ceiling_tls_port = free_port(), free_port()
        conf_path = render_edge_conf(prefix, self.port, tls_port=self.tls_port, repo=repo)
        if not clicks:
            conf_path.write_text(without_clicks(conf_path.read_text()))
        if with_ceiling:
            conf = conf_path.read_text()
            end = conf.rstrip().rfind("}")
            conf_path.write_text(conf[:end] + ceiling_servers(self.ceiling_port, self.ceiling_tls_port) + conf[end:])
        command = edge_command(prefix, workers=workers)
        if pin:
            command[-1] += " worker_cpu_affinity auto;"
        self.process = subprocess.Popen(
            command,
            env={**os.environ, **env},
            stdout=open(prefix / "stderr.log", "ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_port(self.port, process=self.process)
        if with_ceiling:
            wait_for_port(self.ceiling_port, process=self.process)
            wait_for_port(self.ceiling_tls_port, process=self.process)

    def pids(self) -> list[int]:
        return [self.process.pid, *children(self.process.pid)]

    def metrics(self) -> dict[str, float]:
        time.sleep(0.3)  # workers move their counters to the shared dict every 0.1 s
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics") as response:
            text = response.read().decode()
        return {
            line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line and not line.startswith("#")
        }

    def drain(self) -> dict[str, float]:
        """Waits until every worker has flushed its clicks; returns the metrics."""
        deadline = time.monotonic() + 30
        while (values := self.metrics()).get("slingshot_edge_click_buffer_depth", 0) > 0:
            if time.monotonic() > deadline:
                raise TimeoutError("click buffers did not drain")
        return values

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            self.process.wait(timeout=30)

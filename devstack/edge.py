"""The edge (nginx + Lua) on this machine: the top-level nginx.conf made to
run here, and its command."""

import os
from pathlib import Path

from devstack import REPO
from devstack.net import free_port
from devstack.nginx import NGINX_MODULES, make_certificate, nginx_command, nginx_prefix, rewritten

DEBIAN_LUA_MODULES = ("ndk_http_module.so", "ngx_http_lua_module.so")
GEOIP2_MODULE = "ngx_http_geoip2_module.so"
# The country database the edge and the importer share (data/geo/package.json,
# installed by bin/setup); GEOIP_COUNTRY_DB names another.
GEO_COUNTRY_DB = REPO / "data" / "geo" / "country.mmdb"


def geo_country_db() -> Path:
    return Path(os.environ.get("GEOIP_COUNTRY_DB") or GEO_COUNTRY_DB)


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
    nginx_prefix(prefix)
    make_certificate(prefix / "conf" / "certs", "default")
    edge_link = prefix / "edge"
    if edge_link.is_symlink() or edge_link.exists():
        edge_link.unlink()
    edge_link.symlink_to(repo / "edge")
    conf = rewritten(
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

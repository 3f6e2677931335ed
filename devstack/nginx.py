"""nginx on this machine, for the edge (devstack/edge.py) and the
dashboard's front (devstack/dashboard.py): the binary, a prefix, a
configuration file of the repository with some lines changed, the command
that runs it in the foreground, and self-signed certificates."""

import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path

NGINX_MODULES = Path("/usr/share/nginx/modules")


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


def nginx_prefix(prefix: Path) -> None:
    for sub in ("conf", "logs"):
        (prefix / sub).mkdir(parents=True, exist_ok=True)


def rewritten(path: Path, changes: dict[str, str]) -> str:
    """The text of the configuration file `path`, in which each key of
    `changes` that begins a line (after its indentation) is replaced by its
    value; each must begin exactly one line."""
    conf = path.read_text()
    for start, replacement in changes.items():
        conf, count = re.subn(rf"^(\s*){re.escape(start)}(?=[\s;]|$)", rf"\g<1>{replacement}", conf, flags=re.M)
        if count != 1:
            raise ValueError(f"{path.name} must have exactly one line that begins with {start!r}")
    return conf

"""The dashboard on this machine: gunicorn, and its front (nginx before
gunicorn, dashboard/nginx.conf)."""

import sys
from pathlib import Path

from devstack import REPO
from devstack.nginx import nginx_prefix, rewritten


def gunicorn_command(
    port: int, *, workers: int | str = 2, python: str | None = None, control_socket: Path | None = None
) -> list[str]:
    """The dashboard under gunicorn on 127.0.0.1:port, as `make run` starts it,
    with the image's settings (dashboard/gunicorn.conf.py: the master loads
    the application and forks the workers).

    gunicorn's control socket defaults to one path in the home directory,
    which every gunicorn on the machine would share: it goes where asked
    (the local stack's run directory), or nowhere."""
    control = ["--control-socket", str(control_socket)] if control_socket else ["--no-control-socket"]
    return [
        python or sys.executable,
        "-m",
        "gunicorn",
        "slingshot.wsgi",
        "--chdir",
        str(REPO / "dashboard"),
        "--config",
        str(REPO / "dashboard" / "gunicorn.conf.py"),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        *control,
    ]


def render_front_conf(
    prefix: Path,
    port: int,
    *,
    gunicorn_port: int,
    live_port: int | None = None,
    listen_host: str = "127.0.0.1",
    repo: Path = REPO,
) -> Path:
    """Prepares an nginx prefix for the dashboard's front, dashboard/nginx.conf
    of `repo`, on this machine: listening on listen_host:port, and passing
    requests to gunicorn on 127.0.0.1:gunicorn_port, and /live/events to
    serve_live on 127.0.0.1:live_port, in place of the Compose services it
    names."""
    nginx_prefix(prefix)
    conf = rewritten(
        repo / "dashboard" / "nginx.conf",
        {
            "listen 8000;": f"listen {listen_host}:{port};",
            "set $slingshot_gunicorn http://dashboard:8000;": f"set $slingshot_gunicorn http://127.0.0.1:{gunicorn_port};",
            "set $slingshot_live http://live:8010;": f"set $slingshot_live http://127.0.0.1:{live_port or 9};",
        },
    )
    path = prefix / "conf" / "nginx.conf"
    path.write_text(conf)
    return path

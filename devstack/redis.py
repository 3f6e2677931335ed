"""Redis on this machine: its configuration file and command, and what it
says it has done."""

import shutil
from pathlib import Path


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

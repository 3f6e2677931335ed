"""The run directory's env file: the stack's settings and the secrets
generated for it (devstack/stack.py), NAME=value lines that the programs
get as their environment and `manage.py` reads by itself
(SLINGSHOT_ENV_FILE)."""

import os
from pathlib import Path

from devstack.programs import run_dir


def env_file(run: Path) -> Path:
    return run / "env"


def read_env_file(run: Path | None = None) -> dict[str, str]:
    return read_env(env_file(run or run_dir()))


def read_env(path: Path) -> dict[str, str]:
    """NAME=value lines (none if there is no such file); # begins a comment line."""
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    pairs = (line.split("=", 1) for line in lines if "=" in line and not line.lstrip().startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def write_env_file(run: Path, values: dict[str, str]) -> None:
    """Written as 0600 from its first byte: it holds the secrets; and under
    another name first, so that a reader never finds it half written."""
    path = env_file(run)
    making = path.with_name(path.name + ".new")
    fd = os.open(making, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write("".join(f"{key}={value}\n" for key, value in values.items()))
    os.replace(making, path)

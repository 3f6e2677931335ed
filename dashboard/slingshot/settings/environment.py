"""Where the settings come from: the environment, over the defaults of
`.run/env` (SLINGSHOT_ENV_FILE), which `make run` writes. Every module of
the settings reads its variables through `env`."""

import re
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from slingshot.release import REPO_DIR

env = environ.Env()
ENV_FILE = env.str("SLINGSHOT_ENV_FILE", default=str(REPO_DIR / ".run" / "env"))
if ENV_FILE and Path(ENV_FILE).is_file():
    env.read_env(ENV_FILE)


_RATE = re.compile(r"^[1-9][0-9]*/(s|sec|m|min|h|hour|d|day)$", re.IGNORECASE)


def rate(name: str, default: str) -> str:
    """A rate setting, `count/period` (600/min; s, min, hour or day), or
    empty where the default is: refused at start when it is neither, rather
    than at the first request it would count."""
    value = env.str(name, default=default).strip()
    if value and not _RATE.match(value):
        raise ImproperlyConfigured(f"{name} is {value!r}: it is a count per period, such as 600/min or 5/hour")
    return value

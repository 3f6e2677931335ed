"""Where the settings come from: the environment, over the defaults of
`.run/env` (SLINGSHOT_ENV_FILE), which `make run` writes. Every module of
the settings reads its variables through `env`."""

from pathlib import Path

import environ

from slingshot.release import REPO_DIR

env = environ.Env()
ENV_FILE = env.str("SLINGSHOT_ENV_FILE", default=str(REPO_DIR / ".run" / "env"))
if ENV_FILE and Path(ENV_FILE).is_file():
    env.read_env(ENV_FILE)

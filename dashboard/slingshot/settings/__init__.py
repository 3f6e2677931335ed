"""Slingshot settings: everything comes from the environment (django-environ),
read by concern in the modules of this package; docs/configuration.md lists
every variable.

For the local stack, `make run` writes the generated secrets and the ports it
uses to `.run/env`; that file is read as defaults (environment.py), so
`manage.py` works from a second terminal with nothing to export. Real
environment variables always win. Secrets have no default: without
`.run/env` or the variables, Django refuses to start.

- core.py: the secret key, hosts, apps, middleware, templates, static files, logging
- security.py: proxies in front, HTTPS, sign-in throttling, passwords, the pages' CSP
- sso.py: sign-in through an OpenID Connect provider
- database.py: PostgreSQL, and its replica
- redis.py: Redis, its Sentinels, how long a request waits for it
- links.py: where links are served, what a link may be, password checks, publishing
- clicks.py: the click importer, its stores, reports over clicks, accounting
- importers.py: imports from other shorteners
- webhooks.py: events sent to teams' webhooks, and how
- api.py: the REST API, Shlink's and YOURLS' APIs, CORS
- web.py: the dashboard's pages
- metrics.py: Prometheus metrics of the dashboard, the importer and the publisher
"""

from slingshot.release import DASHBOARD_DIR, REPO_DIR  # noqa: F401

from .api import *  # noqa: F403
from .clicks import *  # noqa: F403
from .core import *  # noqa: F403
from .database import *  # noqa: F403
from .environment import ENV_FILE  # noqa: F401
from .importers import *  # noqa: F403
from .links import *  # noqa: F403
from .metrics import *  # noqa: F403
from .redis import *  # noqa: F403
from .security import *  # noqa: F403
from .sso import *  # noqa: F403
from .web import *  # noqa: F403
from .webhooks import *  # noqa: F403

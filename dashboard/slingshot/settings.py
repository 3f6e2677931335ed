"""Slingshot settings: everything comes from the environment (django-environ).

For the local stack, `make run` writes the generated secrets and the ports it
uses to `.run/env`; that file is read here as defaults, so `manage.py` works
from a second terminal with nothing to export. Real environment variables
always win. Secrets have no default: without `.run/env` or the variables,
Django refuses to start.
"""

import ipaddress
import os
import re
from datetime import timedelta
from pathlib import Path

import environ
from corsheaders.defaults import default_headers as default_cors_headers
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from slingshot.release import VERSION

DASHBOARD_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = DASHBOARD_DIR.parent

env = environ.Env()
ENV_FILE = os.environ.get("SLINGSHOT_ENV_FILE", str(REPO_DIR / ".run" / "env"))
if ENV_FILE and Path(ENV_FILE).is_file():
    env.read_env(ENV_FILE)

SECRET_KEY = env.str("SECRET_KEY")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# How many reverse proxies of your own stand in front of Slingshot (a
# TLS-ending load balancer, say), each appending the address it was
# connected from to X-Forwarded-For; and whether the dashboard's own front
# (dashboard/nginx.conf, which `make run` and Compose run) stands between
# them and gunicorn, one more. 0 in all: X-Forwarded-For is ignored, the
# connection's address is the client's. The rule is in slingshot/proxies.py;
# sign-in throttling, the API's throttle and the /metrics allow-list all use it.
PROXIES_IN_FRONT = env.int("TRUSTED_PROXY_COUNT", default=0)
DASHBOARD_FRONT = env.bool("DASHBOARD_FRONT", default=False)
TRUSTED_PROXY_COUNT = PROXIES_IN_FRONT + (1 if DASHBOARD_FRONT else 0)

# Served over HTTPS only (TLS ended by the proxy in front, which must set
# X-Forwarded-Proto, or by the server itself): plain-HTTP requests are
# redirected, cookies are sent over HTTPS only, and browsers are told by HSTS
# to use nothing else for SECURE_HSTS_SECONDS. SECURE_HSTS_PRELOAD asks to
# be put in the browsers' preload list too: set it once you mean to submit
# the domain (`manage.py check --deploy` warns until then).
HTTPS_ONLY = env.bool("HTTPS_ONLY", default=False)
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS_ONLY
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 86400 if HTTPS_ONLY else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# Only a proxy of yours may say the request came over HTTPS: the front ends
# no TLS, and passes on what a client says.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if PROXIES_IN_FRONT else None

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "slingshot",
    "teams",
    "tokens",
    "links",
    "clicks",
    "importers",
    "api",
    "accounts",
    "web",
    "yourls_api",
]

MIDDLEWARE = [
    "slingshot.metrics.RequestMetricsMiddleware",  # first: it times all the others
    # Before anything that answers: the headers go on errors too (CORS_URLS_REGEX below).
    "corsheaders.middleware.CorsMiddleware",
    # Around every door that changes links (the YOURLS API's edge door answers early, below).
    "links.middleware.PublishStatusMiddleware",  # whether a request's link changes were live when it answered
    "slingshot.operators.OperatorEndpointsMiddleware",  # /healthz and /metrics
    "web.edge_calls.EdgeCallsMiddleware",  # what the edges ask, with their secret
    "yourls_api.views.EdgeYourlsMiddleware",  # the YOURLS API an edge passes on, with its secret
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "web.middleware.TimeZoneMiddleware",  # the person's zone, from their session
    "web.middleware.PasswordChangeDueMiddleware",  # a generated password is replaced first
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "accounts.middleware.SessionUseMiddleware",  # after auth, inside sessions: it records a session's use
    "slingshot.db.PrimaryAfterWriteMiddleware",  # a person's writes pin their lists to the primary a moment
    "axes.middleware.AxesMiddleware",  # last, as axes requires
]

ROOT_URLCONF = "slingshot.urls"
WSGI_APPLICATION = "slingshot.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "web.teams.navigation",
                "django.template.context_processors.tz",  # TIME_ZONE: the zone the page shows times in
            ],
        },
    },
    {
        # The rows of the links list only (web/jinja_env.py).
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"environment": "web.jinja_env.environment"},
    },
]

DATABASES = {"default": env.db("DATABASE_URL")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
# A kept connection is checked before a request uses it: after PostgreSQL
# restarts, a worker's first request would otherwise fail on the dead one.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# A PostgreSQL that does not answer fails a new connection after this many
# seconds, rather than holding the request (and /healthz) until the client gives up.
DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
    "connect_timeout", env.int("DATABASE_CONNECT_TIMEOUT", default=5)
)
# A streaming replica for reports, exports and the links list (slingshot/db.py);
# writes and every read that must see them stay on "default".
DATABASE_REPLICA_URL = env.str("DATABASE_REPLICA_URL", default="")
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = {
        **env.db_url_config(DATABASE_REPLICA_URL),
        "CONN_MAX_AGE": DATABASES["default"]["CONN_MAX_AGE"],
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {"connect_timeout": DATABASES["default"]["OPTIONS"]["connect_timeout"]},
        "TEST": {"MIRROR": "default"},
    }
DATABASE_ROUTERS = ["slingshot.db.PrimaryRouter"]
# After a person's write, their links list and exports read the primary this
# long, so that they see their change whatever the replica's lag (slingshot/db.py).
DATABASE_REPLICA_PIN_SECONDS = env.float("DATABASE_REPLICA_PIN_SECONDS", default=5.0)

# Sign-in throttling (slingshot/signin.py): axes' backend first, so that a
# locked-out client's password is not even checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Failures of one user name from one address before that pair is locked out...
SIGN_IN_FAILURE_LIMIT = env.int("SIGN_IN_FAILURE_LIMIT", default=5)
# ...and from one address whatever the user names, before the address is.
SIGN_IN_ADDRESS_FAILURE_LIMIT = env.int("SIGN_IN_ADDRESS_FAILURE_LIMIT", default=30)
# A lockout ends this long after the last failure, which each failure restarts.
SIGN_IN_COOLOFF_MINUTES = env.int("SIGN_IN_COOLOFF_MINUTES", default=15)
AXES_HANDLER = "slingshot.signin.SignInAttempts"  # in PostgreSQL: works while Redis is down
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = SIGN_IN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=SIGN_IN_COOLOFF_MINUTES)
AXES_CLIENT_IP_CALLABLE = "slingshot.proxies.client_address"
AXES_LOCKOUT_CALLABLE = "slingshot.signin.lockout_response"
AXES_DISABLE_ACCESS_LOG = True  # throttling needs the failures only, not a record of every sign-in

# How long an invitation or a new-password link made on the People page
# works (accounts/services.py); it also stops working once used.
PASSWORD_RESET_TIMEOUT = env.int("PASSWORD_LINK_HOURS", default=72) * 3600

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=str(REPO_DIR / ".run" / "static"))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis, shared with the edge (docs/contract.md): the same variable names.
REDIS_HOST = env.str("REDIS_HOST", default="127.0.0.1")
REDIS_PORT = env.int("REDIS_PORT", default=6379)
REDIS_PASSWORD = env.str("REDIS_PASSWORD", default=None) or None
REDIS_DB = env.int("REDIS_DB", default=0)


def _host_ports(items: list[str], *, name: str) -> list[tuple[str, int]]:
    pairs = []
    for item in items:
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ImproperlyConfigured(f"{name}: {item!r} is not host:port")
        pairs.append((host.strip("[]"), int(port)))
    return pairs


# With Sentinels ("host:port,host:port"), the primary is whichever server they
# name for REDIS_SENTINEL_MASTER, found again after a failover; REDIS_HOST and
# REDIS_PORT are then unused by the dashboard, the publisher and the importer.
REDIS_SENTINELS = _host_ports(env.list("REDIS_SENTINELS", default=[]), name="REDIS_SENTINELS")
REDIS_SENTINEL_MASTER = env.str("REDIS_SENTINEL_MASTER", default="slingshot")
REDIS_SENTINEL_PASSWORD = env.str("REDIS_SENTINEL_PASSWORD", default=None) or None
# The publisher marks a link change delivered once this many replicas have it
# too (Redis WAIT), so that a failover to any of them cannot lose it.
REDIS_WAIT_REPLICAS = env.int("REDIS_WAIT_REPLICAS", default=0)
REDIS_WAIT_TIMEOUT_MS = env.int("REDIS_WAIT_TIMEOUT_MS", default=1000)


def _click_stores(raw: str) -> dict[str, str]:
    stores = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        name, _, url = item.partition("=")
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,39}", name) or name == "primary" or name in stores:
            raise ImproperlyConfigured(f"CLICK_STORES: {name!r} is not a new store name ([a-z0-9_-], not 'primary')")
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ImproperlyConfigured(f"CLICK_STORES: the store {name!r} needs a redis:// URL")
        stores[name] = url
    return stores


# Redis servers the edges write clicks to besides the primary, each read by
# `import_clicks --store NAME`: "edge1=redis://:PASSWORD@10.0.0.5:6379/0,...".
CLICK_STORES = _click_stores(env.str("CLICK_STORES", default=""))

# What a request or a scrape asks Redis (the API throttle, the overview's
# import lag, /healthz) gives up after this many seconds to connect and as
# many for the reply; after a failure that waited, requests skip Redis for
# REDIS_REQUEST_COOLDOWN seconds (slingshot/redis.py). Nothing uses Django's
# cache, which stays its default, in each process's memory.
REDIS_REQUEST_TIMEOUT = env.float("REDIS_REQUEST_TIMEOUT", default=0.25)
REDIS_REQUEST_COOLDOWN = env.float("REDIS_REQUEST_COOLDOWN", default=5.0)

# Where short links are served; used for short URLs and to refuse targets
# that would loop back to the edge.
EDGE_BASE_URL = env.str("EDGE_BASE_URL", default="http://127.0.0.1:{}".format(env.int("EDGE_PORT", default=8080)))

# Where people reach the dashboard. Edges older than password pages of their
# own send the visitors of a link with a password here (links.publishing).
DASHBOARD_BASE_URL = env.str(
    "DASHBOARD_BASE_URL", default="http://127.0.0.1:{}".format(env.int("DASHBOARD_PORT", default=8000))
)

LINK_URL_MAX_LENGTH = env.int("LINK_URL_MAX_LENGTH", default=2048)
LINK_SLUG_LENGTH = env.int("LINK_SLUG_LENGTH", default=7)
# Targets on these domains (and their subdomains) are refused, e.g. "evil.example,spam.example".
LINK_DOMAIN_BLOCKLIST = env.list("LINK_DOMAIN_BLOCKLIST", default=[])
# Wrong passwords of a link from one address before that address is locked
# out of that link, from all addresses before the link is locked for
# everyone, and for how long after the last one (links/unlocking.py).
LINK_UNLOCK_FAILURE_LIMIT = env.int("LINK_UNLOCK_FAILURE_LIMIT", default=5)
LINK_UNLOCK_LINK_FAILURE_LIMIT = env.int("LINK_UNLOCK_LINK_FAILURE_LIMIT", default=30)
LINK_UNLOCK_COOLOFF_MINUTES = env.int("LINK_UNLOCK_COOLOFF_MINUTES", default=15)
# Link password checks per second, all visitors and workers together (each
# about 5 ms of CPU): more wait a second, so guesses cannot starve the dashboard.
LINK_UNLOCK_CHECKS_PER_SECOND = env.int("LINK_UNLOCK_CHECKS_PER_SECOND", default=50)
# What the edges show to ask the dashboard whether a link's password is right
# (web/edge_calls.py); empty: nobody is let through a password.
EDGE_DASHBOARD_SECRET = env.str("EDGE_DASHBOARD_SECRET", default="")
# Deliver link changes to Redis from the request that made them, after its
# commit and before it answers, as well as from the publisher process, so
# that a link is served once its create has answered; trying for at most
# LINK_LIVE_TIMEOUT_MS (links/delivery.py), then answering that it is
# pending. Off: the publisher alone delivers, and a link goes live a moment after.
LINK_PUBLISH_INLINE = env.bool("LINK_PUBLISH_INLINE", default=True)
LINK_LIVE_TIMEOUT_MS = env.int("LINK_LIVE_TIMEOUT_MS", default=500)

# REST API (api/): tokens or session, per-token and per-user throttles.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated", "api.permissions.TokenScope"],
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.TokenOrUserRateThrottle"],
    # The API speaks JSON only: what its schema documents is what it takes.
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONParser"],
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Slingshot API",
    "DESCRIPTION": "Short links, their click statistics and raw clicks. "
    "Authenticate with `Authorization: Bearer <token>` (make one with `manage.py create_api_token`).",
    "VERSION": VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.add_error_responses",
    ],
}
# How each API answers a request that fails outside its views, or in a way
# they do not answer (slingshot/errors.py): by the start of the path, the
# function that makes the answer in that API's shape.
ERROR_ANSWERS = {
    "/api/": "api.exceptions.error_answer",
    "/rest/": "api.shlink.problems.error_answer",
    "/yourls-api.php": "yourls_api.views.error_answer",
    "/internal/yourls-api": "yourls_api.views.error_answer",
}
API_BULK_MAX = 1000
# Requests per token (or per signed-in user without a token), e.g. "6000/min".
API_THROTTLE_RATE = env.str("API_THROTTLE_RATE", default="6000/min")

# Shlink's REST API (api/shlink/, docs/compatibility.md), which browsers
# call from other sites (Shlink's web client): CORS for it alone, answered
# by django-cors-headers, preflights without a key. "*" lets any site call
# it, as Shlink does; or a list of origins ("https://app.shlink.io,...").
SHLINK_CORS_ALLOW_ORIGIN = env.list("SHLINK_CORS_ALLOW_ORIGIN", default=["*"])
CORS_URLS_REGEX = r"^/rest/"
CORS_ALLOW_ALL_ORIGINS = SHLINK_CORS_ALLOW_ORIGIN == ["*"]
CORS_ALLOWED_ORIGINS = [] if CORS_ALLOW_ALL_ORIGINS else SHLINK_CORS_ALLOW_ORIGIN
CORS_ALLOW_HEADERS = (*default_cors_headers, "x-api-key")
CORS_PREFLIGHT_MAX_AGE = 3600
CORS_EXPOSE_HEADERS = ["Slingshot-Publish"]

# The YOURLS API (yourls_api/, docs/compatibility.md). A URL the team has a
# link to on the same domain already is answered with that link, not made
# again (YOURLS' YOURLS_UNIQUE_URLS); a time-limited signature's timestamp
# may be this many seconds from now either way (YOURLS_NONCE_LIFE); user
# names and passwords are accepted only when allowed (throttled as sign-in).
YOURLS_UNIQUE_URLS = env.bool("YOURLS_UNIQUE_URLS", default=True)
YOURLS_SIGNATURE_LIFETIME = env.int("YOURLS_SIGNATURE_LIFETIME", default=12 * 3600)
YOURLS_PASSWORD_AUTH = env.bool("YOURLS_PASSWORD_AUTH", default=False)

# Dashboard pages (web/).
LOGIN_URL = "web:sign-in"
LOGIN_REDIRECT_URL = "web:overview"
LOGOUT_REDIRECT_URL = "web:sign-in"
# Chart.js and Pico CSS, built from dashboard/frontend/ by bin/setup.
STATICFILES_DIRS = [DASHBOARD_DIR / "frontend" / "build"]
EDGE_HEALTH_URL = env.str("EDGE_HEALTH_URL", default=EDGE_BASE_URL.rstrip("/") + "/healthz")
WEB_LINKS_PER_PAGE = env.int("WEB_LINKS_PER_PAGE", default=50)
WEB_IMPORT_MAX_ROWS = env.int("WEB_IMPORT_MAX_ROWS", default=10_000)
WEB_IMPORT_MAX_BYTES = env.int("WEB_IMPORT_MAX_BYTES", default=5 * 1024 * 1024)  # larger CSV uploads are refused
WEB_IMPORT_CHUNK_ROWS = env.int("WEB_IMPORT_CHUNK_ROWS", default=500)
# Files given to an import from another shortener on the Import page (a YOURLS dump, say; docs/importing.md).
IMPORTERS_UPLOAD_MAX_BYTES = env.int("IMPORTERS_UPLOAD_MAX_BYTES", default=1024 * 1024 * 1024)
# Tries of a request to another shortener's API that it throttled or failed, with backoff, before the import stops.
IMPORTERS_API_ATTEMPTS = env.int("IMPORTERS_API_ATTEMPTS", default=6)
# Whether an import started from the Import page may fetch from a private network's address (SSRF otherwise).
IMPORTERS_PRIVATE_ADDRESSES = env.bool("IMPORTERS_PRIVATE_ADDRESSES", default=False)
# The most one answer of another shortener's API may hold, decoded, and the
# seconds one request may take, connect to last byte (slingshot/outbound.py).
IMPORTERS_MAX_RESPONSE_MB = env.int("IMPORTERS_MAX_RESPONSE_MB", default=32)
IMPORTERS_REQUEST_TIMEOUT = env.int("IMPORTERS_REQUEST_TIMEOUT", default=60)
# Imports of different teams one `run_imports` works at once (a team's run one at a time; importers/jobs.py).
IMPORTERS_WORKER_JOBS = env.int("IMPORTERS_WORKER_JOBS", default=3)
# Reports under filters (clicks/selectors.py): the breakdowns count the
# latest this many matching raw clicks, and a statement of the raw clicks
# is cancelled after this many milliseconds, its report refused.
REPORT_FILTER_SAMPLE = env.int("REPORT_FILTER_SAMPLE", default=50_000)
REPORT_RAW_TIMEOUT_MS = env.int("REPORT_RAW_TIMEOUT_MS", default=3000)
# Every click accounted for (clicks/accounting.py): how long after an hour
# ends a difference between the clicks the edges served and those stored is
# still waiting for the importer, before the overview flags it.
ACCOUNTING_GRACE_MINUTES = env.int("ACCOUNTING_GRACE_MINUTES", default=15)

# Content-Security-Policy (django-csp) of every page: everything the dashboard
# loads is its own, nothing inline. The API's docs pages add what they need
# (api/docs.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],  # data: for Pico's and Swagger UI's icons and the empty favicon
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Prometheus metrics (slingshot/metrics.py). /metrics answers these networks
# only (the client address as slingshot/proxies.py finds it), others get 403.
DASHBOARD_METRICS_ALLOW = [
    ipaddress.ip_network(network, strict=False)
    for network in env.list("DASHBOARD_METRICS_ALLOW", default=["127.0.0.1/32", "::1/128"])
]
# prometheus_client's multiprocess mode, which it turns on itself when this
# variable is in the environment: every gunicorn worker writes its counts to
# files in this folder, and a scrape of /metrics, whichever worker answers
# it, adds them all up. gunicorn empties it when it starts with
# `--config dashboard/gunicorn.conf.py`, as docker-compose.yml runs it.
# Give it to the dashboard only: another process sharing the folder
# would add its own counts to the dashboard's. Unset, each worker keeps its
# own counts, and a scrape sees those of the one worker that answered it.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")
# The importer's and the publisher's metrics, each on its own HTTP port
# (`--metrics-port`); off while unset.
IMPORTER_METRICS_PORT = env.int("IMPORTER_METRICS_PORT", default=None)
IMPORTER_METRICS_ADDRESS = env.str("IMPORTER_METRICS_ADDRESS", default="127.0.0.1")
PUBLISHER_METRICS_PORT = env.int("PUBLISHER_METRICS_PORT", default=None)
PUBLISHER_METRICS_ADDRESS = env.str("PUBLISHER_METRICS_ADDRESS", default="127.0.0.1")

# Click importer (clicks/, docs/rollups.md).
CLICK_IP_PRIVACY = env.str("CLICK_IP_PRIVACY", default="anonymise")  # anonymise | full | none
CLICK_ENRICH = env.bool("CLICK_ENRICH", default=True)
# The country database (MaxMind DB format) the importer and the edge's
# country rules share; data/geo/package.json names the one bin/setup installs.
GEOIP_COUNTRY_DB = env.str("GEOIP_COUNTRY_DB", default=str(REPO_DIR / "data" / "geo" / "country.mmdb"))
CLICK_IMPORT_BATCH_ENTRIES = env.int("CLICK_IMPORT_BATCH_ENTRIES", default=3000)
CLICK_IMPORT_CLAIM_IDLE_MS = env.int("CLICK_IMPORT_CLAIM_IDLE_MS", default=60_000)
CLICK_IMPORT_LINGER_MS = env.int("CLICK_IMPORT_LINGER_MS", default=250)
CLICK_IMPORT_LOG_INTERVAL = env.float("CLICK_IMPORT_LOG_INTERVAL", default=10.0)
CLICK_PARTITIONS_AHEAD = env.int("CLICK_PARTITIONS_AHEAD", default=3)
CLICK_RETENTION_MONTHS = env.int("CLICK_RETENTION_MONTHS", default=0)  # 0: keep raw clicks forever

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        # django-axes names its lockout rule at every start of every process
        # (each worker, command and program); `make run` has it said once
        # (devstack/stack.py), and AXES_BANNER=1 shows it anywhere.
        "axes.apps": {"level": "INFO" if env.bool("AXES_BANNER", default=False) else "WARNING"},
    },
}

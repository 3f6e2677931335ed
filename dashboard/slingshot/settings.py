"""Slingshot settings: everything comes from the environment (django-environ).

For the local stack, `make run` writes the generated secrets and the ports it
uses to `.run/env`; that file is read here as defaults, so `manage.py` works
from a second terminal with nothing to export. Real environment variables
always win. Secrets have no default: without `.run/env` or the variables,
Django refuses to start.
"""
import os
from pathlib import Path

import environ
from redis.backoff import NoBackoff
from redis.retry import Retry

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

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "links",
    "clicks",
    "api",
    "web",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
# A kept connection is checked before a request uses it: after PostgreSQL
# restarts, a worker's first request would otherwise fail on the dead one.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

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

# Django's cache (API throttle counters) lives in Redis, shared by every worker.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://%s:%d/%d" % (REDIS_HOST, REDIS_PORT, REDIS_DB),
        "KEY_PREFIX": "slingshot:cache",
        "OPTIONS": {
            "password": REDIS_PASSWORD,
            "socket_connect_timeout": 1,
            "socket_timeout": 1,
            "retry": Retry(NoBackoff(), 0),
        },
    }
}

# Where short links are served; used for short URLs and to refuse targets
# that would loop back to the edge.
EDGE_BASE_URL = env.str("EDGE_BASE_URL", default="http://127.0.0.1:%d" % env.int("EDGE_PORT", default=8080))

LINK_URL_MAX_LENGTH = env.int("LINK_URL_MAX_LENGTH", default=2048)
LINK_SLUG_LENGTH = env.int("LINK_SLUG_LENGTH", default=7)
# Targets on these domains (and their subdomains) are refused, e.g. "evil.example,spam.example".
LINK_DOMAIN_BLOCKLIST = env.list("LINK_DOMAIN_BLOCKLIST", default=[])
# Deliver link changes to Redis from the request that made them, as well as
# from the publisher process. Off: requests are faster, the publisher alone
# delivers (within milliseconds, woken by NOTIFY).
LINK_PUBLISH_INLINE = env.bool("LINK_PUBLISH_INLINE", default=False)

# REST API (api/): tokens or session, per-token and per-user throttles.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated", "api.permissions.TokenScope"],
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.TokenOrUserRateThrottle"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Slingshot API",
    "DESCRIPTION": "Short links, their click statistics and raw clicks. "
    "Authenticate with `Authorization: Bearer <token>` (make one with `manage.py create_api_token`).",
    "VERSION": "1.0.0",
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
API_BULK_MAX = 1000
# Requests per token (or per signed-in user without a token), e.g. "6000/min".
API_THROTTLE_RATE = env.str("API_THROTTLE_RATE", default="6000/min")

# Dashboard pages (web/).
LOGIN_URL = "web:sign-in"
LOGIN_REDIRECT_URL = "web:overview"
LOGOUT_REDIRECT_URL = "web:sign-in"
# Chart.js and Pico CSS, built from dashboard/frontend/ by bin/setup.
STATICFILES_DIRS = [DASHBOARD_DIR / "frontend" / "build"]
EDGE_HEALTH_URL = env.str("EDGE_HEALTH_URL", default=EDGE_BASE_URL.rstrip("/") + "/healthz")
WEB_LINKS_PER_PAGE = env.int("WEB_LINKS_PER_PAGE", default=50)
WEB_SIGN_IN_ATTEMPTS = env.int("WEB_SIGN_IN_ATTEMPTS", default=10)  # failures per address or user name...
WEB_SIGN_IN_WINDOW = env.int("WEB_SIGN_IN_WINDOW", default=900)  # ...within this many seconds
WEB_IMPORT_MAX_ROWS = env.int("WEB_IMPORT_MAX_ROWS", default=10_000)
WEB_IMPORT_CHUNK_ROWS = env.int("WEB_IMPORT_CHUNK_ROWS", default=500)

# Click importer (clicks/, docs/rollups.md).
CLICK_IP_PRIVACY = env.str("CLICK_IP_PRIVACY", default="anonymise")  # anonymise | full | none
CLICK_ENRICH = env.bool("CLICK_ENRICH", default=True)
CLICK_IMPORT_BATCH_ENTRIES = env.int("CLICK_IMPORT_BATCH_ENTRIES", default=3000)
CLICK_IMPORT_CLAIM_IDLE_MS = env.int("CLICK_IMPORT_CLAIM_IDLE_MS", default=60_000)
CLICK_IMPORT_LOG_INTERVAL = env.float("CLICK_IMPORT_LOG_INTERVAL", default=10.0)
CLICK_PARTITIONS_AHEAD = env.int("CLICK_PARTITIONS_AHEAD", default=3)
CLICK_RETENTION_MONTHS = env.int("CLICK_RETENTION_MONTHS", default=0)  # 0: keep raw clicks forever

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

"""The APIs: Slingshot's REST API (api/), Shlink's (api/shlink/) and
YOURLS' (yourls_api/), and the CORS that Shlink's alone gets."""

from corsheaders.defaults import default_headers as default_cors_headers

from slingshot.release import VERSION

from .environment import env, rate
from .security import TRUSTED_PROXY_COUNT

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
API_THROTTLE_RATE = rate("API_THROTTLE_RATE", "6000/min")

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
# Shlink's real-time updates on Redis pub/sub (Shlink's REDIS_PUB_SUB_ENABLED): each
# visit stored and each new short URL published on the channels of Shlink's
# topics, with Shlink's payloads (docs/compatibility.md, webhooks/shlink_updates.py).
SHLINK_REDIS_PUB_SUB = env.bool("SHLINK_REDIS_PUB_SUB", default=False)

"""What every Django project sets: the secret key, the hosts, the apps and
their middleware, templates, static files, the language and the logs."""

from slingshot.release import REPO_DIR

from .environment import env

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
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "slingshot",
    "teams",
    "tokens",
    "links",
    "clicks",
    "importers",
    "api",
    "webhooks",
    "accounts",
    "scim",
    "screening",
    "moderation",
    "health",
    "web",
    "yourls_api",
]

MIDDLEWARE = [
    "slingshot.metrics.RequestMetricsMiddleware",  # first: it times all the others
    # Before anything that answers: the headers go on errors too (CORS_URLS_REGEX, api.py).
    "corsheaders.middleware.CorsMiddleware",
    # Around every door that changes links (the YOURLS API's edge door answers early, below).
    "links.middleware.PublishStatusMiddleware",  # whether a request's link changes were live when it answered
    "slingshot.operators.OperatorEndpointsMiddleware",  # /healthz and /metrics
    "web.edge_calls.EdgeCallsMiddleware",  # what the edges ask, with their secret
    "yourls_api.views.EdgeYourlsMiddleware",  # the YOURLS API an edge passes on, with its secret
    "moderation.report_page.EdgeReportMiddleware",  # a short domain's report page an edge passes on
    "links.preview_images.EdgePreviewImageMiddleware",  # a link's uploaded preview image an edge passes on
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "accounts.middleware.SsoSignOutMiddleware",  # the provider's sign-out in the pages' form-action
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "web.middleware.TimeZoneMiddleware",  # the person's zone, from their session
    "web.middleware.PasswordChangeDueMiddleware",  # a generated password is replaced first
    "web.middleware.SsoCheckMiddleware",  # a session of single sign-on asks the provider again, now and then
    "web.middleware.SecondFactorRequiredMiddleware",  # a second factor where a team requires one
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

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=str(REPO_DIR / ".run" / "static"))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

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

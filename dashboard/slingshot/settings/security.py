"""Who the dashboard believes and how it holds: the proxies in front of it,
HTTPS, sign-in throttling, passwords, and the pages' Content-Security-Policy."""

from datetime import timedelta

from csp.constants import NONE, SELF

from .environment import env, rate

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

# Sign-in throttling (slingshot/signin.py): axes' backend first, so that a
# locked-out client's password is not even checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "accounts.backends.LocalSignInGate",  # password sign-in closed by LOCAL_SIGNIN (sso.py)
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

# Passkeys (accounts/passkeys.py): the relying party's id, a host name the
# dashboard is served on or a parent of it (default: the request's host);
# and how often one address may begin or answer a passkey's ceremony.
WEBAUTHN_RP_ID = env.str("WEBAUTHN_RP_ID", default="")
PASSKEY_THROTTLE_RATE = rate("PASSKEY_THROTTLE_RATE", "30/min")

# How long an invitation or a new-password link made on the People page
# works (accounts/services.py); it also stops working once used.
PASSWORD_RESET_TIMEOUT = env.int("PASSWORD_LINK_HOURS", default=72) * 3600

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

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

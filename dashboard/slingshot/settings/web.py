"""The dashboard's pages (web/)."""

from slingshot.release import DASHBOARD_DIR

from .environment import env
from .links import EDGE_BASE_URL

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
# Where `manage.py serve_live` listens: the front passes /live/events to it (web/live.py).
LIVE_HOST = env.str("LIVE_HOST", default="127.0.0.1")
LIVE_PORT = env.int("LIVE_PORT", default=8010)

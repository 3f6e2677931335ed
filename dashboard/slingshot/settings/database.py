"""PostgreSQL, the source of truth, and a streaming replica for reads that
may lag (slingshot/db.py)."""

from .environment import env

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

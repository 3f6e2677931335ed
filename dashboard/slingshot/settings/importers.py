"""Imports from other shorteners (importers/, docs/importing.md)."""

from .environment import env

# Files given to an import from another shortener on the Import page (a YOURLS dump, say; docs/importing.md).
IMPORTERS_UPLOAD_MAX_BYTES = env.int("IMPORTERS_UPLOAD_MAX_BYTES", default=1024 * 1024 * 1024)
# Tries of a request to another shortener's API that it throttled or failed, with backoff, before the import stops.
IMPORTERS_API_ATTEMPTS = env.int("IMPORTERS_API_ATTEMPTS", default=6)
# Whether an import started from the Import page may fetch from a private network's address (SSRF otherwise).
IMPORTERS_PRIVATE_ADDRESSES = env.bool("IMPORTERS_PRIVATE_ADDRESSES", default=False)
# The most one answer of another shortener's API may hold, decoded, and the
# seconds one request may take, connect to last byte (slingshot/outbound/guarded.py).
IMPORTERS_MAX_RESPONSE_MB = env.int("IMPORTERS_MAX_RESPONSE_MB", default=32)
IMPORTERS_REQUEST_TIMEOUT = env.int("IMPORTERS_REQUEST_TIMEOUT", default=60)
# Imports of different teams one `run_imports` works at once (a team's run one at a time; importers/jobs.py).
IMPORTERS_WORKER_JOBS = env.int("IMPORTERS_WORKER_JOBS", default=3)

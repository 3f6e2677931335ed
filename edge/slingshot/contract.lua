-- The names the edge shares with the dashboard in Redis (docs/contract.md).
-- dashboard/slingshot/contract.py holds the same names for the dashboard and
-- the importer; edge/t/test_contract.py checks both against the document.
local _M = { _VERSION = "0.1.0" }

_M.LINK_KEY_PREFIX = "slingshot:link:"
_M.DOMAINS_KEY = "slingshot:domains"
_M.ROBOTS_KEY_PREFIX = "slingshot:robots:"
-- A domain's app-link files: the prefix, then the file's name, ":" and the host.
_M.APP_FILE_KEY_PREFIX = "slingshot:appfile:"
_M.APP_FILES = { "apple-app-site-association", "assetlinks.json" }
_M.LINK_CHANGES_STREAM = "slingshot:link-changes"
_M.VISITS_KEY_PREFIX = "slingshot:visits:"
_M.CLICKS_STREAM = "slingshot:clicks"
-- A hash per UTC hour of the clicks the edges recorded (accounting.lua).
_M.SERVED_KEY_PREFIX = "slingshot:served:"
-- The `v` field of the click entries this edge writes.
_M.CLICK_RECORD_VERSION = "5"
-- What an orphan visit found: no link, or a link not served (record format 5).
_M.ORPHAN_KINDS = { "unknown", "disabled", "scheduled", "expired", "limit", "password",
    "listed", "blocked" }
-- A visitor's one-time pass through a link's password (unlock.lua).
_M.UNLOCK_KEY_PREFIX = "slingshot:unlock:"

return _M

-- Edge settings, read once from the environment.
--
-- Every variable named here must also be declared with an `env NAME;` line in
-- nginx.conf, or nginx hides it from the Lua VM. docs/configuration.md lists them all.
local slug = require("slingshot.slug")
local link = require("slingshot.linkvalue")
local cidr = require("slingshot.cidr")

local tonumber = tonumber
local pairs = pairs
local os_getenv = os.getenv
local error = error
local format = string.format

local _M = { _VERSION = "0.2.0" }

local function number(getenv, name, default, min)
    local raw = getenv(name)
    if raw == nil or raw == "" then
        return default
    end
    local value = tonumber(raw)
    if value == nil or value < min then
        error(format("%s must be a number >= %s, got %q", name, min, raw), 0)
    end
    return value
end

local function text(getenv, name, default)
    local raw = getenv(name)
    if raw == nil or raw == "" then
        return default
    end
    return raw
end

-- An optional redirect target: absolute http(s), no spaces or control bytes,
-- so it can go into a Location header as it is.
local function url(getenv, name)
    local raw = text(getenv, name, nil)
    if raw ~= nil and not link.safe_url(raw) then
        error(format("%s must be an absolute http(s) URL without spaces, got %q", name, raw), 0)
    end
    return raw
end

local function parsed(getenv, name, default, parse)
    local raw = text(getenv, name, default)
    local value, err = parse(raw)
    if not value then
        error(format("%s: %s", name, err), 0)
    end
    return value
end

-- A Redis server from its four variables (host, port, password, db), each
-- defaulting to `fallback`'s. `pool` names its keepalive pool, so that two
-- databases of one server never share a connection.
local function redis_server(getenv, names, fallback)
    fallback = fallback or { host = "127.0.0.1", port = 6379, db = 0 }
    local server = {
        host = text(getenv, names[1], fallback.host),
        port = number(getenv, names[2], fallback.port, 1),
        password = text(getenv, names[3], fallback.password),
        db = number(getenv, names[4], fallback.db, 0),
    }
    server.pool = format("%s:%d:%d", server.host, server.port, server.db)
    return server
end

-- "host:port,host:port" as a list of { host = ..., port = ... }; "" is an empty list.
local function host_ports(raw)
    local list = {}
    for item in raw:gmatch("[^,%s]+") do
        local host, port = item:match("^%[?([^%]]+)%]?:(%d+)$")
        port = tonumber(port)
        if not host or not port or port < 1 or port > 65535 then
            return nil, format("%q is not host:port", item)
        end
        list[#list + 1] = { host = host, port = port }
    end
    return list
end

-- Pure: takes a getenv-like function so busted can test it without nginx.
function _M.parse(getenv)
    -- The primary takes what must be shared by every edge (visit limits);
    -- links are read from EDGE_LINKS_REDIS_* (a replica near the edge) and
    -- clicks written to EDGE_CLICKS_REDIS_* (a store the edge can always
    -- reach); both default to the primary (docs/scale-out.md).
    local primary = redis_server(getenv,
        { "REDIS_HOST", "REDIS_PORT", "REDIS_PASSWORD", "REDIS_DB" })
    local settings = {
        redis_primary = primary,
        redis_sentinels = parsed(getenv, "REDIS_SENTINELS", "", host_ports),
        redis_sentinel_master = text(getenv, "REDIS_SENTINEL_MASTER", "slingshot"),
        redis_sentinel_password = text(getenv, "REDIS_SENTINEL_PASSWORD", nil),
        redis_links = redis_server(getenv, { "EDGE_LINKS_REDIS_HOST", "EDGE_LINKS_REDIS_PORT",
            "EDGE_LINKS_REDIS_PASSWORD", "EDGE_LINKS_REDIS_DB" }, primary),
        redis_clicks = redis_server(getenv, { "EDGE_CLICKS_REDIS_HOST", "EDGE_CLICKS_REDIS_PORT",
            "EDGE_CLICKS_REDIS_PASSWORD", "EDGE_CLICKS_REDIS_DB" }, primary),
        redis_connect_timeout_ms = number(getenv, "EDGE_REDIS_CONNECT_TIMEOUT_MS", 100, 1),
        redis_read_timeout_ms = number(getenv, "EDGE_REDIS_READ_TIMEOUT_MS", 250, 1),
        redis_pool_size = number(getenv, "EDGE_REDIS_POOL_SIZE", 64, 1),
        cache_size = number(getenv, "EDGE_CACHE_SIZE", 100000, 1),
        cache_ttl = number(getenv, "EDGE_CACHE_TTL", 60, 0.001),
        negative_ttl = number(getenv, "EDGE_NEGATIVE_TTL", 30, 0.001),
        -- How long after Redis last gave it a cached link is still served
        -- while Redis cannot be asked (linkcache.lua).
        stale_ttl = number(getenv, "EDGE_STALE_TTL", 3600, 0),
        link_changes_interval = number(getenv, "EDGE_LINK_CHANGES_INTERVAL", 0.2, 0.001),
        click_flush_interval = number(getenv, "EDGE_CLICK_FLUSH_INTERVAL", 0.1, 0.001),
        click_retry_max = number(getenv, "EDGE_CLICK_RETRY_MAX", 2, 0.001),
        -- The click spool (journal.lua); nil: nginx's prefix/spool, set by load().
        click_spool_dir = text(getenv, "EDGE_CLICK_SPOOL_DIR", nil),
        click_spool_max_mb = number(getenv, "EDGE_CLICK_SPOOL_MAX_MB", 1024, 0.1),
        click_memory_mb = number(getenv, "EDGE_CLICK_MEMORY_MB", 8, 0.1),
        -- Where the workers' rings are (journalring.lua): a tmpfs.
        click_memory_dir = text(getenv, "EDGE_CLICK_MEMORY_DIR", "/dev/shm/slingshot-clicks"),
        click_spool_sync_interval = number(getenv, "EDGE_CLICK_SPOOL_SYNC_INTERVAL", 1, 0.001),
        clicks_per_entry = number(getenv, "EDGE_CLICKS_PER_ENTRY", 100, 1),
        slug_min_length = number(getenv, "EDGE_SLUG_MIN_LENGTH", slug.MIN_LENGTH, 1),
        slug_max_length = number(getenv, "EDGE_SLUG_MAX_LENGTH", slug.MAX_LENGTH, 1),
        slug_alphabet = parsed(getenv, "EDGE_SLUG_ALPHABET", slug.DEFAULT_ALPHABET,
            slug.alphabet),
        not_found_url = url(getenv, "EDGE_NOT_FOUND_URL"),
        root_url = url(getenv, "EDGE_ROOT_URL"),
        metrics_allow = parsed(getenv, "EDGE_METRICS_ALLOW", "127.0.0.1/32,::1/128",
            cidr.parse_list),
        -- Certificates (certs.lua); nil: nginx's conf/certs, set by load().
        cert_dir = text(getenv, "EDGE_CERT_DIR", nil),
        cert_ttl = number(getenv, "EDGE_CERT_TTL", 60, 0.001),
        -- The port visitors reach HTTPS on, for the HTTP -> HTTPS redirect.
        https_port = number(getenv, "EDGE_HTTPS_PORT", 443, 1),
        -- Where and with what secret the edge asks the dashboard whether a
        -- link's password is right (unlock.lua); unset: nobody gets through.
        dashboard_url = url(getenv, "EDGE_DASHBOARD_URL"),
        dashboard_secret = text(getenv, "EDGE_DASHBOARD_SECRET", nil),
    }
    settings.https_port_suffix = settings.https_port == 443 and "" or ":" .. settings.https_port
    if settings.dashboard_url then
        local dashboard = settings.dashboard_url:gsub("/+$", "")
        settings.password_check_url = dashboard .. "/internal/link-password"
        -- Where the YOURLS API asked of a short domain is passed (doors.yourls_api).
        settings.yourls_api_url = dashboard .. "/internal/yourls-api"
        -- Where a short domain's report page is passed (doors.report).
        settings.report_url = settings.dashboard_secret and dashboard .. "/internal/report"
        -- Where a link's uploaded preview image is asked (doors.preview_image).
        settings.preview_image_url = settings.dashboard_secret
            and dashboard .. "/internal/preview-image"
    end
    if settings.slug_min_length > settings.slug_max_length then
        error(format("EDGE_SLUG_MIN_LENGTH (%s) is above EDGE_SLUG_MAX_LENGTH (%s)",
            settings.slug_min_length, settings.slug_max_length), 0)
    end
    return settings
end

function _M.load()
    local settings = _M.parse(os_getenv)
    -- nginx.conf's `ssl_certificate certs/...` is relative to its own folder.
    settings.cert_dir = settings.cert_dir or ngx.config.prefix() .. "conf/certs"
    settings.click_spool_dir = settings.click_spool_dir or ngx.config.prefix() .. "spool"
    for key, value in pairs(settings) do
        _M[key] = value
    end
    return _M
end

return _M

-- Counters for /metrics (Prometheus text format).
--
-- Requests only add to a per-worker Lua table; a timer moves the sums into
-- the shared dict `slingshot_metrics` (nginx.conf), which every worker and
-- /metrics read. The shared dict survives a reload, so counters do too.
local ngx = ngx
local shared = ngx.shared
local pairs = pairs
local ipairs = ipairs
local sort = table.sort
local concat = table.concat
local find = string.find
local sub = string.sub
local tostring = tostring
local error = error

local _M = { _VERSION = "0.1.0" }

_M.DICT = "slingshot_metrics"

-- name, type, help, and the label sets that always exist (shown as 0).
local FAMILIES = {
    { "slingshot_edge_requests_total", "counter", "Requests by outcome.",
        { 'outcome="redirect"', 'outcome="not_found"', 'outcome="invalid_slug"',
          'outcome="disabled"', 'outcome="expired"', 'outcome="unavailable"',
          'outcome="root"' } },
    { "slingshot_edge_cache_hits_total", "counter", "Links answered from the worker cache." },
    { "slingshot_edge_cache_negative_hits_total", "counter",
        "Unknown slugs answered from the worker cache." },
    { "slingshot_edge_cache_misses_total", "counter",
        "Lookups the worker cache could not answer." },
    { "slingshot_edge_redis_lookups_total", "counter", "Link lookups sent to Redis." },
    { "slingshot_edge_redis_errors_total", "counter", "Redis calls that failed, by purpose.",
        { 'op="lookup"', 'op="clicks"', 'op="changes"' } },
    { "slingshot_edge_cache_evictions_total", "counter",
        "Cached links dropped because the link changed." },
    { "slingshot_edge_clicks_buffered_total", "counter", "Clicks put in a worker buffer." },
    { "slingshot_edge_clicks_orphan_total", "counter", "Buffered clicks that are orphan visits." },
    { "slingshot_edge_clicks_flushed_total", "counter", "Clicks written to the stream." },
    { "slingshot_edge_clicks_dropped_total", "counter",
        "Clicks lost because a buffer was full or Redis was away at exit." },
    { "slingshot_edge_click_buffer_depth", "gauge", "Clicks waiting in worker buffers." },
}

local pending = {}

local function series(family, labels)
    if labels then
        return family .. "{" .. labels .. "}"
    end
    return family
end

-- Adds n (default 1) to a series, e.g. inc('slingshot_edge_cache_hits_total').
function _M.inc(key, n)
    pending[key] = (pending[key] or 0) + (n or 1)
end

-- Creates every known series at 0, once per nginx start (init phase).
function _M.init()
    local dict = shared[_M.DICT]
    if not dict then
        error("lua_shared_dict " .. _M.DICT .. " is missing from nginx.conf")
    end
    for _, family in ipairs(FAMILIES) do
        for _, labels in ipairs(family[4] or { false }) do
            dict:add(series(family[1], labels or nil), 0)
        end
    end
end

-- Moves this worker's counts into the shared dict.
function _M.sync()
    local dict = shared[_M.DICT]
    for key, n in pairs(pending) do
        if n ~= 0 then
            local _, err = dict:incr(key, n, 0)
            if err then
                ngx.log(ngx.ERR, "metrics: ", key, ": ", err)
            else
                pending[key] = 0
            end
        end
    end
end

local function family_of(key)
    local brace = find(key, "{", 1, true)
    return brace and sub(key, 1, brace - 1) or key
end

-- The whole exposition, every family with its HELP and TYPE lines.
function _M.render()
    local dict = shared[_M.DICT]
    local by_family = {}
    for _, key in ipairs(dict:get_keys(0)) do
        local family = family_of(key)
        local keys = by_family[family] or {}
        keys[#keys + 1] = key
        by_family[family] = keys
    end
    local out = {}
    for _, family in ipairs(FAMILIES) do
        local name = family[1]
        out[#out + 1] = "# HELP " .. name .. " " .. family[3]
        out[#out + 1] = "# TYPE " .. name .. " " .. family[2]
        local keys = by_family[name] or {}
        sort(keys)
        for _, key in ipairs(keys) do
            out[#out + 1] = key .. " " .. tostring(dict:get(key) or 0)
        end
    end
    out[#out + 1] = ""
    return concat(out, "\n")
end

return _M

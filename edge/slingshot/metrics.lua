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

-- The families every module counts into, by name.
_M.REQUESTS = "slingshot_edge_requests_total"
_M.CACHE_HITS = "slingshot_edge_cache_hits_total"
_M.CACHE_NEGATIVE_HITS = "slingshot_edge_cache_negative_hits_total"
_M.CACHE_MISSES = "slingshot_edge_cache_misses_total"
_M.CACHE_EVICTIONS = "slingshot_edge_cache_evictions_total"
_M.CACHE_STALE_HITS = "slingshot_edge_cache_stale_hits_total"
_M.REDIS_LOOKUPS = "slingshot_edge_redis_lookups_total"
_M.REDIS_ERRORS = "slingshot_edge_redis_errors_total"
_M.CLICKS_BUFFERED = "slingshot_edge_clicks_buffered_total"
_M.CLICKS_ORPHAN = "slingshot_edge_clicks_orphan_total"
_M.CLICKS_FLUSHED = "slingshot_edge_clicks_flushed_total"
_M.CLICKS_DROPPED = "slingshot_edge_clicks_dropped_total"
_M.CLICK_BUFFER_DEPTH = "slingshot_edge_click_buffer_depth"
_M.CLICK_SPOOL_BYTES = "slingshot_edge_click_spool_bytes"
_M.CLICK_JOURNALS = "slingshot_edge_click_journals"
_M.VISITS_COUNTED_HERE = "slingshot_edge_visits_counted_here_total"
_M.VISITS_FROM_LAST_READ = "slingshot_edge_visits_from_last_read_total"

-- The series of `family` with one label, e.g. labelled(REQUESTS, "outcome", "redirect").
function _M.labelled(family, label, value)
    return family .. "{" .. label .. '="' .. value .. '"}'
end

_M.OUTCOMES = { "redirect", "not_found", "invalid_slug", "disabled", "expired", "unavailable",
    "root", "scheduled", "limit_reached", "unlock", "pixel", "listed", "blocked", "preview" }
_M.REDIS_OPS = { "lookup", "clicks", "changes" }

-- name, type, help, and the label name and values that always exist (shown as 0).
local FAMILIES = {
    { _M.REQUESTS, "counter", "Requests by outcome.", "outcome", _M.OUTCOMES },
    { _M.CACHE_HITS, "counter", "Links answered from the worker cache." },
    { _M.CACHE_NEGATIVE_HITS, "counter", "Unknown slugs answered from the worker cache." },
    { _M.CACHE_MISSES, "counter", "Lookups the worker cache could not answer." },
    { _M.REDIS_LOOKUPS, "counter", "Link lookups sent to Redis." },
    { _M.REDIS_ERRORS, "counter", "Redis calls that failed, by purpose.", "op", _M.REDIS_OPS },
    { _M.CACHE_EVICTIONS, "counter", "Cached links dropped because the link changed." },
    { _M.CACHE_STALE_HITS, "counter",
        "Expired links served again as Redis last gave them, because it could not be asked." },
    { _M.CLICKS_BUFFERED, "counter", "Clicks written into a worker's journal." },
    { _M.CLICKS_ORPHAN, "counter", "Buffered clicks that are orphan visits." },
    { _M.CLICKS_FLUSHED, "counter", "Clicks written to the stream." },
    { _M.CLICKS_DROPPED, "counter",
        "Clicks lost because a click journal was full (EDGE_CLICK_SPOOL_MAX_MB) or the disk." },
    -- Gauges of the click journals, a part each (set_part).
    { _M.VISITS_COUNTED_HERE, "counter",
        "Visits of limited links counted by the edge while no Redis primary answered." },
    { _M.VISITS_FROM_LAST_READ, "counter",
        "Visits of limited links judged on the count a worker last read: "
        .. "neither the Redis primary nor the replica answered." },
    { _M.CLICK_BUFFER_DEPTH, "gauge", "Clicks not yet written to the stream, in the journals." },
    { _M.CLICK_SPOOL_BYTES, "gauge", "Bytes of those clicks in the click spool." },
    { _M.CLICK_JOURNALS, "gauge",
        "Click journals in the spool: one per worker, and those taken over." },
}

local pending = {}
local PART = "|"
-- The gauges made of parts (set_part), shown as their sum.
local SUMMED = { [_M.CLICK_BUFFER_DEPTH] = true, [_M.CLICK_SPOOL_BYTES] = true,
    [_M.CLICK_JOURNALS] = true }

-- Adds n (default 1) to a series, e.g. inc(CACHE_HITS).
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
        local name, label, values = family[1], family[4], family[5]
        if label then
            for _, value in ipairs(values) do
                dict:add(_M.labelled(name, label, value), 0)
            end
        else
            dict:add(name, 0)
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

-- A gauge made of parts, one per click journal, which /metrics adds up. A
-- part outlives a worker that dies, as its journal does, until the worker
-- that takes the journal over sets it again or drops it.
function _M.set_part(family, part, value)
    shared[_M.DICT]:set(family .. PART .. part, value)
end

function _M.drop_part(family, part)
    shared[_M.DICT]:delete(family .. PART .. part)
end

local function family_of(key)
    local cut = find(key, "[{|]")
    return cut and sub(key, 1, cut - 1) or key
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
        if SUMMED[name] then
            local sum = 0
            for _, key in ipairs(keys) do
                sum = sum + (dict:get(key) or 0)
            end
            out[#out + 1] = name .. " " .. tostring(sum)
        else
            for _, key in ipairs(keys) do
                out[#out + 1] = key .. " " .. tostring(dict:get(key) or 0)
            end
        end
    end
    out[#out + 1] = ""
    return concat(out, "\n")
end

return _M
